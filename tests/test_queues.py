"""Queues as a user sees them: what --report says is sent, and the counters at exit."""
from __future__ import annotations

import os

from conftest import PROGRAMS, floem, left_in_shm


def report(app: str, tmp_path) -> str:
    out = tmp_path / "out"
    result = floem("build", os.path.join(PROGRAMS, app), "-o", str(out), "--report")
    assert result.returncode == 0, result.stderr
    return (out / "report.txt").read_text()


def test_dead_200_byte_field_is_not_sent(tmp_path) -> None:
    text = report("queue_dead_field.py", tmp_path)
    assert "channel 0: sends key: 4 bytes of 204 per-packet state bytes" in text
    assert "scratch" not in text.split("queues:")[1]
    assert "entry: 32 bytes" in text


def test_each_channel_sends_only_its_live_fields(tmp_path) -> None:
    text = report("queue_two_channels.py", tmp_path)
    assert "channel 0: sends key: 4 bytes of 12" in text
    assert "channel 1: sends key, val: 8 bytes of 12" in text
    assert "serve: thread" in text and "uses key, val" in text


def test_variable_size_field_is_sent_with_its_length(tmp_path) -> None:
    text = report("queue_variable_field.py", tmp_path)
    assert "sends len, text (variable)" in text


def test_counters_at_exit_count_drops_and_bad_qids() -> None:
    lossy = floem("run", "--report", os.path.join(PROGRAMS, "queue_lossy.py"))
    assert lossy.returncode == 0, lossy.stderr
    assert "small[0] (process queue_lossy): enqueued 5, dequeued 5, dropped 6" in lossy.stderr
    steering = floem("run", "--report", os.path.join(PROGRAMS, "queue_steering.py"))
    assert "steered (process queue_steering): bad qid 2" in steering.stderr
    for i in range(3):
        assert f"steered[{i}] (process queue_steering): enqueued 3, dequeued 3, dropped 0" \
            in steering.stderr


def test_a_full_port_takes_the_packets_a_lossy_queue_would_drop() -> None:
    result = floem("run", "--report", os.path.join(PROGRAMS, "queue_full_port.py"))
    assert result.returncode == 0, result.stderr
    assert "small[0] (process queue_full_port): enqueued 4, dequeued 4, dropped 0" in result.stderr
    assert "push 5: -500\npush 6: -600\n" in result.stdout


def test_processes_share_memory_and_leave_nothing_behind() -> None:
    before = set(os.listdir("/dev/shm"))
    result = floem("run", "--timeout", "60", os.path.join(PROGRAMS, "queue_processes.py"))
    assert result.stdout == "received 1000 packets, sum 500500\n", result.stderr
    assert left_in_shm(before) == set()


def test_queue_with_more_threads_than_instances_warns(tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text('''
from floem import Element, Input, Output, Queue, Segment
class Src(Element):
    def configure(self):
        self.out = Output()
    def impl(self):
        self.run_c("output { out(); }")
class Sink(Element):
    def configure(self):
        self.inp = Input()
q = Queue("q", inst=2)
class A(Segment):
    def impl(self):
        Src() >> q
class B(Segment):
    def impl(self):
        q >> Sink()
A("a")
B("b", cores=[0, 1, 2])
''')
    result = floem("check", str(app))
    assert result.returncode == 0, result.stderr
    assert "3 threads but queue 'q' only 2 instances" in result.stderr


def test_queue_counters_are_readable_from_main(tmp_path) -> None:
    app = tmp_path / "app.py"
    with open(os.path.join(PROGRAMS, "queue_lossy.py")) as f:
        text = f.read()
    text = text.replace("""    printf("after draining: %d\\n", pop(0));""", """    printf("after draining: %d\\n", pop(0));
    floem_queue_stats_t stats;
    floem_queue_stats(floem_queue_instance("small", 0), &stats);
    printf("enqueued %llu dropped %llu missing %d\\n", (unsigned long long)stats.enqueued,
           (unsigned long long)stats.dropped, floem_queue_instance("small", 1) == NULL);""")
    app.write_text(text)
    result = floem("run", str(app))
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("enqueued 5 dropped 6 missing 1\n")
