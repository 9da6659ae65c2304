"""One pod on a node: its sandbox (IP, network namespace, volumes, service-account token), its
init and app containers (podman containers where podman has the image, else local processes; see
_resolve_image) restarted by the pod's restartPolicy with backoff, its
status written through `pods/NAME/status`, and its graceful deletion (SIGTERM, the grace period,
SIGKILL, final status, then the API object deleted with gracePeriodSeconds=0 and a uid
precondition)."""

from __future__ import annotations

import logging
import os
import queue
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .kube import JSON, KubeClient, KubeError, core_path, make_event, pod_path
from .netns import NetworkError, PodNetwork
from .node_container import (ContainerConfigError, ContainerOptions, ContainerRun, PodmanImage, PodmanImages,
                             container_argv, container_name, effective_security, mount_flags, security_flags,
                             user_flag, verify_run_as_non_root)
from .node_env import (SERVICE_ACCOUNT_DIR, ObjectReader, PodConfigError, container_environment,
                       expand_references)
from .node_images import ImageTable, LocalImage
from .node_probes import probes_of, run_probe
from .node_process import ContainerProcess, LaunchSpec, now_rfc3339
from .node_status import ConditionClock, ContainerSlot, container_status, pod_conditions
from .node_termination import DEFAULT_PATH as DEFAULT_TERMINATION_PATH
from .node_termination import FALLBACK_POLICY, FILE_POLICY
from .node_volumes import SERVICE_ACCOUNT_VOLUME, TOKEN_SECONDS, VolumeWriter, unmount_below

RESTART_BACKOFF_BASE_S = 1.0
RESTART_BACKOFF_MAX_S = 60.0
IMAGE_PULL_BACKOFF_BASE_S = 1.0
IMAGE_PULL_BACKOFF_MAX_S = 30.0
CONFIG_RETRY_S = 2.0
SHUTDOWN_GRACE_S = 1.0                # node shutdown, or a pod force-deleted by someone else
NETWORK_ANNOTATION = "devcluster.fibermpi.io/network"
MOUNTS_ANNOTATION = "devcluster.fibermpi.io/mounts"


@dataclass
class NodeContext:
    """What every pod of a node shares: the node's identity, API access and network."""

    node_name: str
    state_dir: str
    client_factory: Callable[[], KubeClient]
    host_ip: str
    api_host: str                    # the API server as seen from a pod
    api_port: int
    ca_file: str
    allocatable: JSON
    network: Any                     # ClusterNetwork, or None for the host network
    cid: str
    pod_cidr_prefix: str             # "10.S.K." : pod IPs are prefix + 2..254
    private_mounts: bool
    log_dir: str                     # <state-dir>/logs: <ns>_<pod>_<uid>/<container>.log
    base_path: str                   # PATH given to containers
    images: ImageTable = field(default_factory=ImageTable)   # local images: name -> host directory
    podman: PodmanImages | None = None                       # podman's image store (None: not used)
    used_ips: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("node"))

    def allocate_ip(self) -> str:
        with self.lock:
            for host in range(2, 255):
                address = f"{self.pod_cidr_prefix}{host}"
                if address not in self.used_ips:
                    self.used_ips.add(address)
                    return address
        raise NetworkError(f"node {self.node_name}: no free pod IP in {self.pod_cidr_prefix}0/24")

    def release_ip(self, address: str) -> None:
        with self.lock:
            self.used_ips.discard(address)

    def pod_dir(self, uid: str) -> str:
        return os.path.join(self.state_dir, "pods", uid)

    def pid_dir(self) -> str:
        return os.path.join(self.state_dir, "pids", "pods")


class PodWorker(threading.Thread):
    """Drives one pod from its arrival on the node to its deletion."""

    def __init__(self, context: NodeContext, pod: JSON):
        super().__init__(name=f"pod-{pod['metadata']['name']}", daemon=True)
        self.context = context
        self.client = context.client_factory()
        self.pod = pod
        self.uid = pod["metadata"]["uid"]
        self.events: queue.Queue[str] = queue.Queue()
        self.gone = False                 # the API object no longer exists
        self.stopping = False             # the node shuts down
        self.pod_ip = ""
        self.ip_released = False
        self.network: PodNetwork | None = None
        self.sandbox_ready = False
        self.token_expires = 0.0
        self.clock = ConditionClock()
        self.start_time = ""
        self.last_posted: JSON | None = None
        self.deadline = 0.0                       # activeDeadlineSeconds, as a monotonic time
        self.failure: tuple[str, str] | None = None   # (reason, message) of a pod failed as a whole
        spec = pod.get("spec", {})
        self.restart_policy = spec.get("restartPolicy", "Always")
        self.slots = [ContainerSlot(c, True) for c in spec.get("initContainers") or []]
        self.slots += [ContainerSlot(c, False) for c in spec.get("containers") or []]
        self.log = logging.getLogger(f"pod {self.namespace}/{self.name}")

    @property
    def name(self) -> str:
        return self.pod["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.pod["metadata"].get("namespace", "default")

    # --- called by the node --------------------------------------------------------------------
    def update(self, pod: JSON) -> None:
        self.pod = pod
        # Another writer changed what this kubelet reported (the node lifecycle controller sets Ready
        # to False while the node is silent): the kubelet reports its own view again.
        if self.last_posted is not None and _ready_status(pod.get("status", {})) != _ready_status(self.last_posted):
            self.last_posted = None
        self.events.put("update")

    def mark_gone(self) -> None:
        self.gone = True
        self.events.put("gone")

    def stop(self) -> None:
        """Node shutdown: kill the containers and remove the sandbox, leave the API object."""
        self.stopping = True
        self.events.put("stop")

    # --- lifecycle -----------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._lifecycle()
        except Exception:  # a pod's failure must never take the node down
            self.log.exception("pod worker failed")
            self._kill_all(0)
        finally:
            self._remove_sandbox()

    def _lifecycle(self) -> None:
        if self.pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            self._wait_for_deletion()
            return
        self.start_time = now_rfc3339()
        if self.pod["spec"].get("activeDeadlineSeconds"):
            self.deadline = time.monotonic() + float(self.pod["spec"]["activeDeadlineSeconds"])
        self._post_status()
        while not self.sandbox_ready:
            if self._deletion_requested():
                self._finish_deletion()
                return
            try:
                self._create_sandbox()
            except (PodConfigError, NetworkError, KubeError, OSError) as error:
                self.log.warning("sandbox not ready: %s", error)
                for slot in self.slots:
                    slot.waiting_reason, slot.waiting_message = "CreateContainerConfigError", str(error)
                self._post_status()
                self._wait(CONFIG_RETRY_S)
        while True:
            if self._deletion_requested():
                self._finish_deletion()
                return
            if self._past_deadline():
                self._end_for_deadline()
                return
            self._refresh_token_if_due()
            self._start_due_containers()
            self._run_due_probes()
            self._post_status()
            if self._phase() in ("Succeeded", "Failed"):
                self._remove_sandbox()
                self._wait_for_deletion()
                return
            self._wait(self._next_wakeup())

    def _wait(self, timeout: float | None) -> None:
        try:
            self.events.get(timeout=timeout)
        except queue.Empty:
            pass

    def _next_wakeup(self) -> float | None:
        moments = [slot.next_start for slot in self._active_slots() if slot.current is None and not slot.done]
        for slot in self.slots:
            if slot.current is not None:
                moments += [probe.next_at for probe in slot.probes.values()]
                if slot.kill_deadline:
                    moments.append(slot.kill_deadline)
        if self.token_expires:
            moments.append(self.token_expires - TOKEN_SECONDS * 0.2)
        if self.deadline:
            moments.append(self.deadline)
        if not moments:
            return None
        return max(0.05, min(moments) - time.monotonic())

    def _past_deadline(self) -> bool:
        return bool(self.deadline) and time.monotonic() >= self.deadline

    def _end_for_deadline(self) -> None:
        """spec.activeDeadlineSeconds passed: the containers are stopped and the pod fails."""
        self.failure = ("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
        self._event("Normal", "DeadlineExceeded", self.failure[1])
        self._kill_all(float(self.pod["spec"].get("terminationGracePeriodSeconds", 30)))
        for slot in self.slots:
            slot.done = True
        self._post_status()
        self._remove_sandbox()
        self._wait_for_deletion()

    def _deletion_requested(self) -> bool:
        return self.gone or self.stopping or bool(self.pod["metadata"].get("deletionTimestamp"))

    def _wait_for_deletion(self) -> None:
        while not self._deletion_requested():
            self._wait(None)
        self._finish_deletion()

    # --- containers ----------------------------------------------------------------------------
    def _active_slots(self) -> list[ContainerSlot]:
        """The first init container not done yet, or, once all are, the app containers."""
        for slot in self.slots:
            if slot.init and not slot.done:
                return [slot]
        return [slot for slot in self.slots if not slot.init]

    def _start_due_containers(self) -> None:
        now = time.monotonic()
        for slot in self._active_slots():
            if slot.current is None and not slot.done and slot.next_start <= now:
                self._start(slot)

    def _start(self, slot: ContainerSlot) -> None:
        image = self._resolve_image(slot)
        if isinstance(image, LocalImage):
            failure = image.pull_failure(slot.spec.get("image", ""), self.context.private_mounts)
            if failure:
                self._image_pull_failed(slot, failure)
                return
            slot.image_id = f"devcluster-dir://{image.directory}"
        elif isinstance(image, PodmanImage):
            slot.image_id = image.status_id
        slot.pull_failures = 0
        if slot.last is not None:
            slot.restart_count += 1
            log_path = self._log_path(slot)
            if os.path.exists(log_path):
                os.replace(log_path, log_path[: -len(".log")] + ".previous.log")
        if isinstance(image, PodmanImage):
            self._start_container(slot, image)
            return
        if not slot.spec.get("command") and not slot.spec.get("args"):
            self._record_start_failure(slot, "NoCommand",
                                       f"container {slot.name} has no command: the development cluster's nodes "
                                       f"do not pull or run images, a container runs its command and args")
            return
        try:
            verify_run_as_non_root(self.pod, slot.spec, effective_security(self.pod, slot.spec), None)
            launch = self._launch_spec(slot)
        except (PodConfigError, ContainerConfigError) as error:
            self._config_error(slot, str(error))
            return
        process = ContainerProcess(launch, self._on_exit)
        try:
            process.start()
        except OSError as error:
            self._record_start_failure(slot, "StartError", str(error))
            return
        self._record_started(slot, process, launch)

    def _record_started(self, slot: ContainerSlot, process: ContainerProcess, launch: LaunchSpec) -> None:
        slot.current = process
        slot.env = launch.env
        slot.kill_deadline = 0.0
        slot.probes = {} if slot.init else probes_of(slot.spec)
        if not self._run_hook(slot, "postStart", float(self.pod["spec"].get("terminationGracePeriodSeconds", 30))):
            self._kill_container(slot)
        slot.waiting_reason = slot.waiting_message = ""
        self._event("Normal", "Started", f"Started container {slot.name}")

    def _local_image(self, slot: ContainerSlot) -> LocalImage | None:
        image = self._resolve_image(slot)
        return image if isinstance(image, LocalImage) else None

    def _resolve_image(self, slot: ContainerSlot) -> LocalImage | PodmanImage | None:
        """The image table's entry (those given with --image first), else podman's image, else
        a default entry (fibermpi/runtime and fibermpi/examples as host directories), else None:
        the host's filesystem."""
        name = str(slot.spec.get("image") or "")
        entry = self.context.images.find(name)
        if entry is not None and not entry.fallback:
            return entry
        found = self.context.podman.find(name) if self.context.podman is not None else None
        return found or entry

    def _start_container(self, slot: ContainerSlot, image: PodmanImage) -> None:
        """One run of the container under podman."""
        try:
            launch, options = self._container_launch(slot, image)
        except (PodConfigError, ContainerConfigError) as error:
            self._config_error(slot, str(error))
            return
        if not options.argv:
            self._record_start_failure(slot, "StartError", f"container {slot.name}: no command specified (the "
                                                           f"pod names none and image {image.reference} has none)")
            return
        process = ContainerRun(launch, self._on_exit, options=options)
        try:
            process.start()
        except OSError as error:
            self._record_start_failure(slot, "StartError", str(error))
            return
        self._record_started(slot, process, launch)

    def _config_error(self, slot: ContainerSlot, message: str) -> None:
        """The container cannot be created as asked: it waits (CreateContainerConfigError, a Failed
        event when the reason is new) and is tried again."""
        if slot.waiting_message != message:
            self._event("Warning", "Failed", f"Error: {message}")
        slot.waiting_reason, slot.waiting_message = "CreateContainerConfigError", message
        slot.next_start = time.monotonic() + CONFIG_RETRY_S

    def _service_environment(self) -> dict[str, str]:
        """What every container's environment holds of the cluster: where the API server is."""
        return {
            "KUBERNETES_SERVICE_HOST": self.context.api_host,
            "KUBERNETES_SERVICE_PORT": str(self.context.api_port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(self.context.api_port),
            "KUBERNETES_PORT": f"tcp://{self.context.api_host}:{self.context.api_port}",
        }

    def _container_launch(self, slot: ContainerSlot, image: PodmanImage) -> tuple[LaunchSpec, ContainerOptions]:
        container = slot.spec
        security = effective_security(self.pod, container)
        verify_run_as_non_root(self.pod, container, security, image)
        reader = ObjectReader(self.client, self.namespace)
        # The runtime merges the image's environment under these, and sets HOSTNAME, HOME, PATH.
        environment = container_environment(self._pod_with_status(), container, reader, self._service_environment(),
                                            self.context.allocatable)
        argv = container_argv(container, image, lambda part: expand_references(part, environment))
        scratch = os.path.join(self.context.pod_dir(self.uid), "containers", slot.name, str(slot.restart_count))
        mounts = self._mounts_of(container, on_host=False)
        termination_file = self._termination_file(container, scratch, mounts, on_host=False)
        flags = user_flag(security, image) + security_flags(self.pod, security) + mount_flags(mounts)
        if self.pod["spec"].get("hostNetwork") or self.network is None:
            flags += ["--network", "host"]
        else:
            flags += ["--network", f"ns:/run/netns/{self.network.netns}"]
        if self.pod["spec"].get("hostNetwork"):
            flags += ["--uts", "host"]
        else:
            flags += ["--hostname", self.pod["spec"].get("hostname") or self.name]
        options = ContainerOptions(name=container_name(self.context.cid or "host", self.uid, slot.name,
                                                       slot.restart_count),
                                   image=image, argv=argv, flags=flags, cluster_id=self.context.cid or "host")
        launch = LaunchSpec(command=argv, env=environment, working_dir=container.get("workingDir", ""),
                            hostname=self.pod["spec"].get("hostname") or self.name, mounts=mounts,
                            scratch_dir=scratch, log_path=self._log_path(slot), netns=None, private_mounts=False,
                            pid_file=os.path.join(self.context.pid_dir(), f"{self.uid}_{slot.name}"),
                            tty=bool(container.get("tty")), termination_file=termination_file,
                            termination_policy=container.get("terminationMessagePolicy") or FILE_POLICY)
        return launch, options

    def _image_pull_failed(self, slot: ContainerSlot, failure: str) -> None:
        """The image's directory cannot be mounted: ErrImagePull at the first failure, then
        ImagePullBackOff, tried again with a doubling delay (the directory may appear later)."""
        image = slot.spec.get("image", "")
        delay = min(IMAGE_PULL_BACKOFF_MAX_S, IMAGE_PULL_BACKOFF_BASE_S * 2 ** slot.pull_failures)
        if slot.pull_failures == 0:
            slot.waiting_reason, slot.waiting_message = "ErrImagePull", failure
            self._event("Warning", "Failed", failure)
            self._event("Warning", "Failed", "Error: ErrImagePull")
        else:
            slot.waiting_reason = "ImagePullBackOff"
            slot.waiting_message = f'Back-off pulling image "{image}": {failure}'
            self._event("Normal", "BackOff", f'Back-off pulling image "{image}"')
        slot.pull_failures += 1
        slot.next_start = time.monotonic() + delay

    def _record_start_failure(self, slot: ContainerSlot, reason: str, message: str) -> None:
        failed = ContainerProcess(LaunchSpec([], {}, "", "", [], "", "", None, False, ""), self._on_exit)
        failed.started_at = failed.finished_at = now_rfc3339()
        failed.returncode = 128
        slot.last = failed
        slot.waiting_reason, slot.waiting_message = reason, message
        self._event("Warning", "Failed", f"Error: {message}")
        self._after_exit(slot, 128, override=(reason, message))

    def _on_exit(self, process: ContainerProcess) -> None:
        self.events.put("exit")

    def _collect_exits(self) -> None:
        for slot in self.slots:
            if slot.current is not None and not slot.current.running:
                slot.last, slot.current = slot.current, None
                exit_code = slot.last.terminated_state()["exitCode"]
                self._after_exit(slot, exit_code)

    def _after_exit(self, slot: ContainerSlot, exit_code: int, override: tuple[str, str] | None = None) -> None:
        restart = self.restart_policy == "Always" or (self.restart_policy == "OnFailure" and exit_code != 0)
        if slot.init:
            restart = exit_code != 0 and self.restart_policy != "Never"
            slot.done = exit_code == 0 or not restart
        else:
            slot.done = not restart
        if restart and not self._deletion_requested():
            delay = min(RESTART_BACKOFF_MAX_S, RESTART_BACKOFF_BASE_S * 2 ** slot.restart_count)
            slot.next_start = time.monotonic() + delay
            if override is None:
                slot.waiting_reason = "CrashLoopBackOff"
                slot.waiting_message = (f"back-off {delay:g}s restarting failed container={slot.name} "
                                        f"pod={self.name}_{self.namespace}({self.uid})")
            self._event("Warning", "BackOff", f"Back-off restarting failed container {slot.name} "
                                              f"in pod {self.name}_{self.namespace}({self.uid})")

    def _log_path(self, slot: ContainerSlot) -> str:
        return os.path.join(self.context.log_dir, f"{self.namespace}_{self.name}_{self.uid}", f"{slot.name}.log")

    def _launch_spec(self, slot: ContainerSlot) -> LaunchSpec:
        container = slot.spec
        reader = ObjectReader(self.client, self.namespace)
        image = self._local_image(slot)
        base = {
            # A local image's bin directory heads PATH, as its ENV PATH would; the pod's own PATH
            # (env or envFrom) replaces this one.
            "PATH": f"{image.bin_dir}:{self.context.base_path}" if image else self.context.base_path,
            "HOME": "/root" if os.geteuid() == 0 else os.environ.get("HOME", "/"),
            "HOSTNAME": self.pod["spec"].get("hostname") or self.name,
            **self._service_environment(),
        }
        environment = container_environment(self._pod_with_status(), container, reader, base,
                                            self.context.allocatable)
        command = [expand_references(str(part), environment)
                   for part in (container.get("command") or []) + (container.get("args") or [])]
        scratch = os.path.join(self.context.pod_dir(self.uid), "containers", slot.name, str(slot.restart_count))
        mounts = self._image_mounts(image) + self._mounts_of(container)
        termination_file = self._termination_file(container, scratch, mounts)
        return LaunchSpec(command=command, env=environment, working_dir=container.get("workingDir", ""),
                          hostname=self.pod["spec"].get("hostname") or self.name,
                          mounts=mounts, scratch_dir=scratch, log_path=self._log_path(slot),
                          netns=self.network.netns if self.network else None,
                          private_mounts=self.context.private_mounts,
                          pid_file=os.path.join(self.context.pid_dir(), f"{self.uid}_{slot.name}"),
                          tty=bool(container.get("tty")), termination_file=termination_file,
                          termination_policy=container.get("terminationMessagePolicy") or FILE_POLICY)

    def _termination_file(self, container: JSON, scratch: str, mounts: list[dict[str, Any]],
                          on_host: bool = True) -> str:
        """An empty file for this run's termination message, mounted writable at the container's
        terminationMessagePath (without a private mount namespace it stays unmounted and empty)."""
        policy = container.get("terminationMessagePolicy") or FILE_POLICY
        if policy not in (FILE_POLICY, FALLBACK_POLICY):
            raise PodConfigError(f"terminationMessagePolicy {policy!r}: must be {FILE_POLICY} or {FALLBACK_POLICY}")
        target = container.get("terminationMessagePath") or DEFAULT_TERMINATION_PATH
        if not os.path.isabs(target) or os.path.normpath(target) == "/":
            raise PodConfigError(f"terminationMessagePath {target!r}: must be an absolute file path")
        os.makedirs(scratch, exist_ok=True)
        path = os.path.join(scratch, "termination-log")
        with open(path, "wb"):
            pass
        os.chmod(path, 0o666)
        if not any(os.path.normpath(m["target"]) == os.path.normpath(target) for m in mounts):
            if on_host:
                self._ensure_top_level_dir(os.path.dirname(target) or target)
            mounts.append({"source": path, "target": target, "readOnly": False, "optional": True})
        return path

    def _image_mounts(self, image: LocalImage | None) -> list[dict[str, Any]]:
        """The local image's directory, read-only at its mount path (before the volumes, so that a
        volume may be mounted inside it)."""
        if image is None:
            return []
        self._ensure_top_level_dir(image.mount_path)
        return [{"source": image.directory, "target": image.mount_path, "readOnly": True}]

    def _mounts_of(self, container: JSON, on_host: bool = True) -> list[dict[str, Any]]:
        volumes_dir = os.path.join(self.context.pod_dir(self.uid), "volumes")
        mounts = []
        declared = {volume["name"]: volume for volume in self.pod["spec"].get("volumes") or []}
        for mount in container.get("volumeMounts") or []:
            volume = declared.get(mount.get("name"))
            if volume is None:
                raise PodConfigError(f"volumeMount {mount.get('name')!r} names no volume of the pod")
            source = volume["hostPath"]["path"] if "hostPath" in volume else os.path.join(volumes_dir, volume["name"])
            if mount.get("subPath"):
                source = os.path.join(source, mount["subPath"])
            mounts.append({"source": source, "target": mount["mountPath"], "readOnly": bool(mount.get("readOnly"))})
            if on_host:
                self._ensure_top_level_dir(mount["mountPath"])
        if not self.pod["spec"].get("hostNetwork"):
            mounts.append({"source": self._hosts_file(), "target": "/etc/hosts", "readOnly": False})
        if self._automount_token() and not any(m["target"].rstrip("/") == SERVICE_ACCOUNT_DIR for m in mounts):
            mounts.append({"source": os.path.join(volumes_dir, SERVICE_ACCOUNT_VOLUME), "target": SERVICE_ACCOUNT_DIR,
                           "readOnly": True})
        return mounts

    def _ensure_top_level_dir(self, mount_path: str) -> None:
        """A mount point in a new top-level directory (/data) cannot be made inside an overlay of
        `/`: the directory is created on the host and listed in host-dirs.txt for `down` to remove."""
        top = "/" + os.path.normpath(mount_path).strip("/").split("/")[0]
        if top == "/" or os.path.exists(top):
            return
        os.makedirs(top, exist_ok=True)
        with self.context.lock, open(os.path.join(self.context.state_dir, "host-dirs.txt"), "a",
                                     encoding="utf-8") as handle:
            handle.write(top + "\n")

    # --- probes ----------------------------------------------------------------------------------
    def _run_due_probes(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.current is None or not slot.current.running:
                continue
            if slot.kill_deadline:
                if now >= slot.kill_deadline:
                    slot.current.signal_group(signal.SIGKILL)
                continue
            startup = slot.probes.get("startupProbe")
            starting = startup is not None and not startup.passed
            kinds = ["startupProbe"] if starting else ["livenessProbe", "readinessProbe"]
            for kind in kinds:
                probe = slot.probes.get(kind)
                if probe is None or probe.next_at > now:
                    continue
                ok, message = run_probe(probe.spec, slot.spec, self.pod_ip, slot.current.process.pid,
                                        self.network.netns if self.network else None, self.context.private_mounts,
                                        slot.env, slot.current.exec_prefix())
                probe.record(ok, message)
                label = kind[: -len("Probe")].capitalize()
                if not ok:
                    self._event("Warning", "Unhealthy", f"{label} probe failed: {message}")
                if kind != "readinessProbe" and probe.failed_out:
                    self._kill_for_probe(slot, label)
                    break

    def _kill_for_probe(self, slot: ContainerSlot, label: str) -> None:
        """A failed liveness or startup probe: the container is stopped (SIGTERM, the grace period,
        SIGKILL) and restarted as its restartPolicy says."""
        self._event("Normal", "Killing", f"Container {slot.name} failed {label.lower()} probe, will be restarted")
        self._kill_container(slot)

    def _kill_container(self, slot: ContainerSlot) -> None:
        """SIGTERM now, SIGKILL once the pod's grace period has passed (checked by the loop)."""
        slot.current.signal_group(signal.SIGTERM)
        slot.kill_deadline = time.monotonic() + float(self.pod["spec"].get("terminationGracePeriodSeconds", 30))

    def _run_hook(self, slot: ContainerSlot, hook: str, timeout_s: float) -> bool:
        """Runs the container's postStart or preStop handler (exec, httpGet, tcpSocket or sleep);
        False, with a Failed...Hook event, when it fails."""
        handler = (slot.spec.get("lifecycle") or {}).get(hook)
        if not handler or slot.current is None or slot.current.process is None:
            return True
        if "sleep" in handler:
            self._wait(min(timeout_s, float(handler["sleep"].get("seconds", 0))))
            return True
        ok, message = run_probe(dict(handler, timeoutSeconds=timeout_s), slot.spec, self.pod_ip,
                                slot.current.process.pid, self.network.netns if self.network else None,
                                self.context.private_mounts, slot.env, slot.current.exec_prefix())
        if not ok:
            reason = "FailedPostStartHook" if hook == "postStart" else "FailedPreStopHook"
            self._event("Warning", reason, f"{hook} hook of container {slot.name} failed: {message}")
        return ok

    # --- sandbox -------------------------------------------------------------------------------
    def _create_sandbox(self) -> None:
        if self.context.network is not None and not self.pod["spec"].get("hostNetwork"):
            if not self.pod_ip:
                self.pod_ip = self.context.allocate_ip()
            self.network = PodNetwork(self.context.cid, self.uid)
            self.network.create(self.pod_ip, self.context.network.subnet.prefixlen, self.context.host_ip)
        else:
            self.pod_ip = self.context.host_ip
        self._annotate_isolation()
        self._write_volumes()
        self.sandbox_ready = True

    def _annotate_isolation(self) -> None:
        network = "pod-netns" if self.network else "host"
        mounts = "private" if self.context.private_mounts else "host"
        annotations = self.pod["metadata"].get("annotations") or {}
        if annotations.get(NETWORK_ANNOTATION) == network and annotations.get(MOUNTS_ANNOTATION) == mounts:
            return
        if not self.network:
            self.log.warning("runs in the host network with IP %s (no network namespace)", self.pod_ip)
        self.client.patch(pod_path(self.namespace, self.name),
                          {"metadata": {"annotations": {NETWORK_ANNOTATION: network, MOUNTS_ANNOTATION: mounts}}})

    def _remove_sandbox(self) -> None:
        if self.network is not None:
            try:
                self.network.delete()
            except NetworkError as error:
                self.log.warning("removing the network namespace: %s", error)
            self.network = None
        # Once only: the sandbox is removed when the pod ends and again when its worker exits, and
        # a second release would free the address another pod got meanwhile (two pods, one IP).
        if self.pod_ip and self.pod_ip != self.context.host_ip and not self.ip_released:
            self.context.release_ip(self.pod_ip)
            self.ip_released = True
        self.token_expires = 0.0

    def _pod_with_status(self) -> JSON:
        pod = dict(self.pod)
        pod["status"] = dict(self.pod.get("status") or {}, podIP=self.pod_ip, podIPs=[{"ip": self.pod_ip}],
                             hostIP=self.context.host_ip, hostIPs=[{"ip": self.context.host_ip}])
        return pod

    def _automount_token(self) -> bool:
        return self.pod["spec"].get("automountServiceAccountToken", True) is not False

    def _volume_writer(self) -> VolumeWriter:
        volumes_dir = os.path.join(self.context.pod_dir(self.uid), "volumes")
        return VolumeWriter(self.client, self._pod_with_status(), volumes_dir, self.context.ca_file)

    def _hosts_file(self) -> str:
        return os.path.join(self.context.pod_dir(self.uid), "etc-hosts")

    def _write_hosts_file(self) -> None:
        """The pod's /etc/hosts as the kubelet writes it: localhost, the pod's own names, hostAliases."""
        spec = self.pod["spec"]
        hostname = spec.get("hostname") or self.name
        lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
                 "::1\tlocalhost ip6-localhost ip6-loopback"]
        if spec.get("subdomain"):
            lines.append(f"{self.pod_ip}\t{hostname}.{spec['subdomain']}.{self.namespace}.svc.cluster.local\t{hostname}")
        else:
            lines.append(f"{self.pod_ip}\t{hostname}")
        for alias in spec.get("hostAliases") or []:
            lines.append(f"{alias.get('ip', '')}\t" + "\t".join(alias.get("hostnames") or []))
        os.makedirs(os.path.dirname(self._hosts_file()), exist_ok=True)
        with open(self._hosts_file(), "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")

    def _write_volumes(self) -> None:
        self._write_hosts_file()
        self._volume_writer().write_all(self._automount_token())
        if self._automount_token():
            self.token_expires = time.monotonic() + TOKEN_SECONDS

    def _refresh_token_if_due(self) -> None:
        """Rewrites the token when 80% of its life has passed, as the kubelet does."""
        if self.token_expires and time.monotonic() >= self.token_expires - TOKEN_SECONDS * 0.2:
            try:
                self._volume_writer().write_service_account()
                self.token_expires = time.monotonic() + TOKEN_SECONDS
            except (KubeError, PodConfigError) as error:
                self.log.warning("refreshing the service-account token: %s", error)
                self.token_expires = time.monotonic() + 60 + TOKEN_SECONDS * 0.2

    # --- deletion ------------------------------------------------------------------------------
    def _finish_deletion(self) -> None:
        metadata = self.pod["metadata"]
        grace = metadata.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = self.pod["spec"].get("terminationGracePeriodSeconds", 30)
        if self.stopping or self.gone:
            grace = min(grace, SHUTDOWN_GRACE_S)
        if any(slot.current is not None for slot in self.slots):
            self._event("Normal", "Killing", "Stopping container " +
                        ", ".join(slot.name for slot in self.slots if slot.current is not None))
        self._kill_all(float(grace))
        if self.stopping or self.gone:
            return
        for slot in self.slots:
            slot.done = True
        self._post_status()
        self._remove_sandbox()
        try:
            self.client.delete(pod_path(self.namespace, self.name), grace_period_seconds=0, precondition_uid=self.uid)
        except KubeError as error:
            if error.code not in (404, 409):
                self.log.warning("deleting the pod: %s", error)

    def _kill_all(self, grace_s: float) -> None:
        """SIGTERM to every running container's process group, SIGKILL to what is left after grace_s."""
        running = [slot for slot in self.slots if slot.current is not None]
        deadline = time.monotonic() + grace_s
        for slot in running:
            if slot.current.running and not self.stopping:
                self._run_hook(slot, "preStop", max(1.0, deadline - time.monotonic()))
        for slot in running:
            slot.current.signal_group(signal.SIGTERM)
        while any(slot.current.running for slot in running) and time.monotonic() < deadline:
            self._wait(min(0.2, max(0.0, deadline - time.monotonic())))
        for slot in running:
            slot.current.signal_group(signal.SIGKILL)
        for slot in running:
            if slot.current.process is not None:
                slot.current.process.wait()
                slot.current.wait_for_session(5)
                end = time.monotonic() + 5
                while slot.current.running and time.monotonic() < end:
                    time.sleep(0.01)  # the waiter thread records the exit right after wait()
            slot.last, slot.current = slot.current, None

    # --- status --------------------------------------------------------------------------------
    def _phase(self) -> str:
        if self.failure:
            return "Failed"
        if not self.sandbox_ready:
            return "Pending"
        self._collect_exits()
        for slot in self.slots:
            if slot.init and slot.done and slot.last is not None and slot.last.terminated_state()["exitCode"] != 0:
                return "Failed"
        if any(slot.init and not slot.done for slot in self.slots):
            return "Pending"
        app = [slot for slot in self.slots if not slot.init]
        if all(slot.done for slot in app):
            codes = [slot.last.terminated_state()["exitCode"] if slot.last else 0 for slot in app]
            return "Succeeded" if all(code == 0 for code in codes) else "Failed"
        if any(slot.current is not None or slot.last is not None for slot in app):
            return "Running"
        return "Pending"

    def _status(self) -> JSON:
        phase = self._phase()
        current = self.pod.get("status", {}).get("conditions") or []
        scheduled = next((c for c in current if c.get("type") == "PodScheduled"), None)
        status: JSON = {"phase": phase,
                        "conditions": pod_conditions(self.clock, self.slots, phase, self.sandbox_ready, scheduled),
                        "hostIP": self.context.host_ip, "hostIPs": [{"ip": self.context.host_ip}],
                        "startTime": self.start_time,
                        "containerStatuses": [container_status(slot, self.uid) for slot in self.slots if not slot.init]}
        if self.pod_ip:
            status["podIP"] = self.pod_ip
            status["podIPs"] = [{"ip": self.pod_ip}]
        if self.failure:
            status["reason"], status["message"] = self.failure
        if any(slot.init for slot in self.slots):
            status["initContainerStatuses"] = [container_status(slot, self.uid) for slot in self.slots if slot.init]
        return status

    def _post_status(self) -> None:
        status = self._status()
        if status == self.last_posted or self.gone:
            return
        try:
            updated = self.client.patch(pod_path(self.namespace, self.name, "status"), {"status": status})
        except KubeError as error:
            if error.code == 404:
                self.mark_gone()
            else:
                self.log.warning("status update: %s", error)
            return
        self.last_posted = status
        if updated.get("metadata"):
            self.pod = updated

    def _event(self, kind: str, reason: str, message: str) -> None:
        event = make_event(self.pod, kind, reason, message, "kubelet", self.context.node_name)
        try:
            self.client.create(core_path("events", self.namespace), event)
        except KubeError as error:
            self.log.debug("event %s: %s", reason, error)


def _ready_status(status: JSON) -> str | None:
    return next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)


def clear_pod_dir(context: NodeContext, uid: str) -> None:
    """Removes the pod's volumes (unmounting its memory emptyDirs) and scratch files once it is deleted."""
    unmount_below(context.pod_dir(uid))
    shutil.rmtree(context.pod_dir(uid), ignore_errors=True)
