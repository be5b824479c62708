"""Write and read the web page's chat threads and their messages."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlmodel import Session, col, delete, select

from storage.models import ChatMessage, ChatThread

TITLE_CHARS = 80


def create_thread(engine: Engine, owner: str | None, title: str = "") -> ChatThread:
    """Insert an empty thread for its owner."""
    with Session(engine) as session:
        thread = ChatThread(owner=owner, title=title[:TITLE_CHARS])
        session.add(thread)
        session.commit()
        session.refresh(thread)
        return thread


def get_thread(engine: Engine, thread_id: int) -> ChatThread | None:
    """Return a thread by id."""
    with Session(engine) as session:
        return session.get(ChatThread, thread_id)


def list_threads(engine: Engine, owner: str | None, limit: int = 100) -> list[ChatThread]:
    """Return an owner's threads (every thread for None), most recently active first."""
    with Session(engine) as session:
        query = select(ChatThread)
        if owner is not None:
            query = query.where(ChatThread.owner == owner)
        query = query.order_by(col(ChatThread.updated_at).desc(), col(ChatThread.id).desc()).limit(limit)
        return list(session.exec(query).all())


def add_message(engine: Engine, thread_id: int, message: ChatMessage) -> ChatMessage:
    """Append a message to a thread, naming the thread after its first user message."""
    with Session(engine) as session:
        thread = session.get(ChatThread, thread_id)
        if thread is None:
            raise KeyError(f"thread {thread_id} does not exist")
        message.thread_id = thread_id
        if not thread.title and message.role == "user" and message.text.strip():
            thread.title = " ".join(message.text.split())[:TITLE_CHARS]
        thread.updated_at = datetime.now(UTC)
        session.add(message)
        session.add(thread)
        session.commit()
        session.refresh(message)
        return message


def list_messages(engine: Engine, thread_id: int) -> list[ChatMessage]:
    """Return a thread's messages, oldest first."""
    with Session(engine) as session:
        query = select(ChatMessage).where(ChatMessage.thread_id == thread_id).order_by(col(ChatMessage.id))
        return list(session.exec(query).all())


def get_message(engine: Engine, thread_id: int, message_id: int) -> ChatMessage | None:
    """Return a message of a thread by id (None when it belongs to another thread)."""
    with Session(engine) as session:
        message = session.get(ChatMessage, message_id)
        return message if message is not None and message.thread_id == thread_id else None


def delete_thread(engine: Engine, thread_id: int) -> None:
    """Delete a thread and its messages (the jobs and batches it started stay, with their files)."""
    with Session(engine) as session:
        session.exec(delete(ChatMessage).where(col(ChatMessage.thread_id) == thread_id))
        session.exec(delete(ChatThread).where(col(ChatThread.id) == thread_id))
        session.commit()
