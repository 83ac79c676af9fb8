"""Element types, one table: the name wirewise records (torch's dtype name), the names
nccl-tests prints for it, and its size in bytes.

Both sides read it: the collective workload (wirewise.workloads.collective) sizes a sweep's
elements by it (count = bytes / element size, as nccl-tests' -d does), and the nccl-tests
reader (wirewise.orchestrator.record.nccl_tests) turns a row's `type` column into the dtype it
records and checks a row's size against count x element size.

nccl-tests' names are the test_typenames of its src/common.cu: `int8 uint8 int32 uint32 int64
uint64 half float double`, `bfloat16` since NCCL 2.10, `f8e4m3 f8e5m2` for NCCL's fp8 types;
built against NCCL 1 it printed `char` and `int` (ncclChar, ncclInt). Sizes are those of the C
types of ncclDataType_t (nccl.h).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ElementType:
    name: str  # as wirewise records it: torch's dtype name
    bytes: int  # per element
    nccl_tests: tuple[str, ...]  # as nccl-tests prints it in a row's `type` column


ELEMENT_TYPES = (
    ElementType("int8", 1, ("int8", "char")),
    ElementType("uint8", 1, ("uint8",)),
    ElementType("int32", 4, ("int32", "int")),
    ElementType("uint32", 4, ("uint32",)),
    ElementType("int64", 8, ("int64",)),
    ElementType("uint64", 8, ("uint64",)),
    ElementType("float16", 2, ("half",)),
    ElementType("float32", 4, ("float",)),
    ElementType("float64", 8, ("double",)),
    ElementType("bfloat16", 2, ("bfloat16",)),
    ElementType("float8_e4m3fn", 1, ("f8e4m3",)),
    ElementType("float8_e5m2", 1, ("f8e5m2",)),
)
ELEMENT_BYTES = {element.name: element.bytes for element in ELEMENT_TYPES}  # wirewise's name -> bytes
NCCL_TESTS_TYPES = {spelling: element for element in ELEMENT_TYPES for spelling in element.nccl_tests}
