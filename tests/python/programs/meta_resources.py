"""fibermpi.meta on Process targets (and on a subclass's run): the GPUs a Process is given, the
cores it is bound to, and a request that cannot fit refused at start. Run with
CUDA_VISIBLE_DEVICES=GPU-a,GPU-b,GPU-c,GPU-d (no GPU is needed to see what each is given)."""

import os

import fibermpi as mp


@mp.meta(gpu=2)
def report_gpus(report):
    report.put(os.environ.get("CUDA_VISIBLE_DEVICES"))


@mp.meta(cpu=1)
def report_cores(report):
    report.put(len(os.sched_getaffinity(0)))


@mp.meta(memory=2**40)  # MB: an exbibyte
def too_big():
    pass


class OneGpu(mp.Process):
    def __init__(self, report):
        super().__init__()
        self.report = report

    @mp.meta(gpu=1)
    def run(self):
        self.report.put(os.environ.get("CUDA_VISIBLE_DEVICES"))


if __name__ == "__main__":
    report = mp.Queue()
    for target in (report_gpus, report_cores):
        process = mp.Process(target=target, args=(report,))
        process.start()
        print(target.__name__.upper(), report.get(timeout=60), flush=True)
        process.join(60)
    process = OneGpu(report)
    process.start()
    print("SUBCLASS GPUS", report.get(timeout=60), flush=True)
    process.join(60)
    try:
        mp.Process(target=too_big).start()
        print("NOT REFUSED", flush=True)
    except mp.UsageError as error:
        print("REFUSED", error, flush=True)
