"""``Memory.context`` finishes the block on the search's trace through the results' public
``stage_trace``, not a private attribute of theirs; the block's trace is the search's, then its own stages'."""

from __future__ import annotations

import ast
import inspect
import textwrap

from diarist.memory import Memory
from diarist.read.search import Results


def test_context_reads_no_private_attribute_of_another_object():
    tree = ast.parse(textwrap.dedent(inspect.getsource(Memory.context)))
    private = [f"{ast.unparse(node.value)}.{node.attr}" for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
               and not (isinstance(node.value, ast.Name) and node.value.id == "self")]
    assert private == []


def test_the_stage_trace_is_the_one_the_results_report(memory):
    memory.add_fact("The kiln reached 1200 degrees on Sunday.", fact_id="kiln")
    memory.add_fact("Maria moved to Lisbon in May.", fact_id="lisbon")
    results = memory.search("When did the kiln reach 1200 degrees?", explain=True)
    assert results.stage_trace.records is results.trace and results.stage_trace.dropped is results.dropped
    assert Results().stage_trace.records == []
    block = memory.context("When did the kiln reach 1200 degrees?", explain=True)
    stages = [r.stage for r in block.trace]
    assert stages[: len(results.trace)] == [r.stage for r in results.trace]
    assert "budget" in stages[len(results.trace):]  # the block's own stages, on the same trace
