"""place_memory: where states and queues live."""
from __future__ import annotations

import pytest

from floem import (Element, Field, Flow, FloemError, Input, Int, Output, PerPacket, Persistent,
                   Program, Queue, Segment, State, main, target)

from .conftest import run_until


class Counts(State):
    n = Field(Int)


class P(State):
    x = Field(Int)


class Src(Element):
    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c("output { out(); }")


class Use(Element):
    counts = Persistent(Counts)

    def states(self, counts):
        self.counts = counts

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c("(void)counts;")


def program(main_reads: bool, enq_nic: bool = False, second_cpu_producer: bool = False) -> Program:
    with Program(f"pm_{main_reads}_{enq_nic}_{second_cpu_producer}") as p:
        nic_only, shared = Counts("nic_only"), Counts("shared")
        q = Queue("q")

        class F(Flow):
            state = PerPacket(P)

            def impl(self):
                class Tx(Segment):
                    def impl(self):
                        Src() >> q

                class Tx2(Segment):
                    def impl(self):
                        Src() >> q

                class Rx(Segment):
                    def impl(self):
                        q >> Use(states=[nic_only])

                class Cpu(Segment):
                    def impl(self):
                        Src() >> Use(states=[shared])
                Tx("tx", device=target.NIC if enq_nic else target.CPU)
                if second_cpu_producer:
                    Tx2("tx2")
                Rx("rx", device=target.NIC)
                Cpu("cpu")
        F()
        main("(void)shared;" + (" (void)nic_only;" if main_reads else ""))
    return p


def test_state_used_only_on_the_nic_lives_in_nic_memory():
    ir = run_until(program(main_reads=False), "place_memory")
    assert ir.homes.states == {"nic_only": "nic", "shared": "host"}


def test_state_main_reads_lives_in_host_memory():
    ir = run_until(program(main_reads=True), "place_memory")
    assert ir.homes.states["nic_only"] == "host"


def test_queue_homes_and_devices():
    cpu_to_nic = run_until(program(False), "place_memory").queue_home("q")
    assert (cpu_to_nic.enq_device, cpu_to_nic.deq_device, cpu_to_nic.home) == ("CPU", "NIC", "host")
    nic_to_nic = run_until(program(False, enq_nic=True), "place_memory").queue_home("q")
    assert nic_to_nic.home == "nic"


def test_producers_on_both_devices_are_rejected():
    with pytest.raises(FloemError, match="from both the CPU and the NIC"):
        run_until(program(False, enq_nic=True, second_cpu_producer=True), "place_memory")
