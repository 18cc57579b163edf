"""Ctrl-C during the embedded model's load and generation: ``dreamgym demo`` leaves at once.

Each point runs the real CLI on the shipped distilled model (1M parameters) in a subprocess and
sends SIGINT at a fixed offset after a line the demo prints: just before the load, and just
after it, when the first batch of model calls starts. The process must be gone within 2 s,
with status 130 and the one line ``interrupted`` on stderr (no traceback).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import pytest

pytest.importorskip("xllamacpp")

LOAD_STARTS = "loading the weights of "
"""The demo prints it just before the load (the distilled model loads in 0.2-0.6 s here)."""
GENERATION_STARTS = "loaded in "
"""The demo prints it just after the load; the first step's batch of model calls follows."""
POINTS = [(LOAD_STARTS, 0.03 * i) for i in range(10)] + [(GENERATION_STARTS, 0.03 * i) for i in range(10)]
"""The demo's two episodes take about 0.4-0.8 s after the load here: the points stay inside them."""
EXIT_BOUND_S = 2.0
ANNOUNCEMENT_BOUND_S = 120.0
"""Start-up (imports) on a busy 2-core machine; a bound, not a wait."""


@dataclass(frozen=True)
class Interrupted:
    """What one SIGINT did."""

    announcement: str
    offset_s: float
    running: bool
    """Whether the demo was still running when it was signalled (else it had ended on its own)."""
    gone_within_bound: bool
    returncode: int | None
    stderr: str


def interrupt_demo(announcement: str, offset_s: float) -> Interrupted:
    """Run ``dreamgym demo``, send SIGINT ``offset_s`` after ``announcement``, see how it ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from dreamgym_env.cli import main; main()", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    announced = threading.Event()
    stderr: list[str] = []

    def read_stdout() -> None:  # drained to the end, so that a full pipe never blocks the demo
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(announcement):
                announced.set()
        announced.set()

    def read_stderr() -> None:
        assert process.stderr is not None
        stderr.append(process.stderr.read())

    readers = [threading.Thread(target=read, daemon=True) for read in (read_stdout, read_stderr)]
    for reader in readers:
        reader.start()
    try:
        assert announced.wait(ANNOUNCEMENT_BOUND_S), f"no {announcement!r} line"
        time.sleep(offset_s)
        running = process.poll() is None
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=EXIT_BOUND_S)
            gone = True
        except subprocess.TimeoutExpired:
            gone = False
    finally:
        process.kill()
        process.wait()
        for reader in readers:
            reader.join()
    return Interrupted(announcement, offset_s, running, gone, process.returncode, "".join(stderr))


@pytest.mark.slow
def test_ctrl_c_during_the_load_and_generation_exits_at_once_with_130_and_one_line():
    # One at a time: on a busy 2-core machine, demos side by side stretch each other's native
    # load, during which a Ctrl-C waits for the GIL (xllamacpp's constructor holds it).
    results = [interrupt_demo(announcement, offset_s) for announcement, offset_s in POINTS]
    hit = [r for r in results if r.running]
    assert len(hit) >= len(POINTS) - 2, [r for r in results if not r.running]  # points past the end
    failed = [
        f"{r.offset_s:.2f} s after {r.announcement!r}: "
        + (f"status {r.returncode}, stderr {r.stderr[-300:]!r}" if r.gone_within_bound else "still running")
        for r in hit
        if not r.gone_within_bound or r.returncode != 130 or r.stderr.splitlines() != ["interrupted"]
    ]
    assert not failed, "\n".join(failed)
