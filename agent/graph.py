"""Wire the stages of a job into a LangGraph StateGraph."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agent import routing
from agent.context import JobContext
from agent.nodes.accuracy import accuracy
from agent.nodes.classify import classify
from agent.nodes.definition import definition
from agent.nodes.diagnose import diagnose
from agent.nodes.edit import edit
from agent.nodes.finalize import finalize
from agent.nodes.generate import generate
from agent.nodes.llm_edit import llm_edit
from agent.nodes.log import log
from agent.nodes.performance import performance
from agent.nodes.profile import profile
from agent.nodes.repair import repair
from agent.nodes.requirements import requirements
from agent.nodes.search import search
from agent.stage_timing import timed
from agent.state import JobState


def build_graph(
    checkpointer: BaseCheckpointSaver[str] | None = None,
) -> CompiledStateGraph[JobState, JobContext, JobState, JobState]:
    """Build the job graph: spec → definition → files → test (repair ↺) → measure → profile → log → diagnose ↺."""
    graph = StateGraph(JobState, context_schema=JobContext)
    for node in (requirements, definition, generate, accuracy, repair, performance, profile, log, diagnose, edit,
                 llm_edit, search, classify, finalize):
        graph.add_node(node.__name__, timed(node))
    graph.add_edge(START, "requirements")
    graph.add_conditional_edges("requirements", routing.after_requirements)
    graph.add_conditional_edges("definition", routing.after_definition)
    graph.add_conditional_edges("generate", routing.after_generate)
    graph.add_conditional_edges("accuracy", routing.after_accuracy)
    graph.add_edge("performance", "profile")
    graph.add_edge("profile", "log")
    graph.add_conditional_edges("log", routing.after_log)
    graph.add_conditional_edges("repair", routing.after_repair)
    graph.add_conditional_edges("diagnose", routing.after_diagnosis)
    graph.add_conditional_edges("llm_edit", routing.after_llm_edit)
    graph.add_edge("edit", "search")
    graph.add_conditional_edges("search", routing.after_search)
    graph.add_conditional_edges("classify", routing.after_classify)
    graph.add_edge("finalize", END)
    return graph.compile(checkpointer=checkpointer)


graph = build_graph()
