#!/usr/bin/env python3
"""The library's folders include each other one way only.

Reads every `#include "..."` of include/fiber/, src/fiber/, mpi_bridge/ and k8s/client/ and checks:
  - the strict layers: include/ (the public API) includes nothing internal; base/ only itself and
    include/; mpi_bridge/ only base/ and include/; engine/ and wire/ only those three;
    k8s/client/ only itself and include/;
  - no include circle between folders, of two folders or more.
Prints the folder graph and the largest source files. Exit status 1 on a failure.
Usage: check_layers.py [repository root]
"""
import collections
import pathlib
import re
import sys

# Which folders each strict layer may include besides itself.
STRICT = {
    "include": set(),
    "base": {"include"},
    "mpi_bridge": {"include", "base"},
    # The cores every feature is built on: the progress engine, and the message codec and kinds.
    "engine": {"include", "base", "mpi_bridge"},
    "wire": {"include", "base", "mpi_bridge"},
    "k8s_client": {"include"},
}



def folder_of_file(relative: str) -> str | None:
    parts = relative.split("/")
    if parts[:2] == ["include", "fiber"]:
        return "include"
    if parts[:2] == ["src", "fiber"]:
        # The public API's own sources (src/fiber/pool.cc, detail/) are the front end's.
        return parts[2] if len(parts) > 3 and parts[2] != "detail" else "api"
    if parts[0] == "mpi_bridge":
        return "mpi_bridge"
    if parts[:2] == ["k8s", "client"]:
        return "k8s_client"
    return None


def folder_of_include(name: str, root: pathlib.Path) -> str | None:
    if name.startswith("mpi_bridge/"):
        return "mpi_bridge"
    if name.startswith("k8s/client/"):
        return "k8s_client"
    if name.startswith("fiber/"):
        if (root / "include" / name).exists():
            return "include"
        parts = name.split("/")
        return parts[1] if len(parts) > 2 else None
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    sources = [p for folder in ("include/fiber", "src/fiber", "mpi_bridge", "k8s/client")
               for p in (root / folder).rglob("*") if p.suffix in (".h", ".cc")]
    if not sources:
        print(f"check_layers: no sources under {root}")
        return 1
    edges: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    failures = []
    sizes = []
    for path in sources:
        relative = str(path.relative_to(root))
        text = path.read_text()
        sizes.append((text.count("\n"), relative))
        source = folder_of_file(relative)
        for name in re.findall(r'^#include "([^"]+)"', text, re.M):
            target = folder_of_include(name, root)
            if target is None:
                if name.startswith(("fiber/", "mpi_bridge/", "k8s/")):
                    failures.append(f"{relative}: includes {name}, which does not exist")
                continue
            if target == source:
                continue
            edges[(source, target)].append(f"{relative} -> {name}")
            if source in STRICT and target not in STRICT[source]:
                failures.append(f"{relative}: {source}/ may not include {target}/ ({name})")

    graph = collections.defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
    print("folders and what they include:")
    for folder in sorted(graph):
        print(f"  {folder:11} -> {', '.join(sorted(graph[folder]))}")

    circles = {tuple(sorted(pair)) for pair in edges if (pair[1], pair[0]) in edges}
    for a, b in sorted(circles):
        failures.append(f"an include circle between {a}/ and {b}/:\n      " +
                        "\n      ".join(edges[(a, b)] + edges[(b, a)]))
    # Longer circles, through three folders or more.
    for component in strongly_connected(graph):
        if len(component) >= 3:
            failures.append("an include circle through " + ", ".join(sorted(component)))
    print(f"include circles: {len(circles)}")
    print("largest files (lines): " +
          ", ".join(f"{path} {lines}" for lines, path in sorted(sizes, reverse=True)[:3]))
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


def strongly_connected(graph) -> list[set[str]]:
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    nodes = set(graph) | {t for targets in graph.values() for t in targets}

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            result.append(component)

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return result


if __name__ == "__main__":
    sys.exit(main())
