"""Whose wind-tunnel task: ``"geoprobe"`` (geoprobe/windtunnel/tasks.py) or ``"authors"`` (the authors'
released code, geoprobe/windtunnel/authors.py). A run.json's ``task`` names the convention only for the
authors' tasks, so every run written before conventions existed reads as geoprobe's."""

from __future__ import annotations

from typing import Any, Literal, Union

from geoprobe.windtunnel import tasks
from geoprobe.windtunnel.authors import AuthorsTask, make_authors_task
from geoprobe.windtunnel.tasks import TaskError

Convention = Literal["geoprobe", "authors"]
CONVENTIONS: tuple[Convention, ...] = ("geoprobe", "authors")
AnyTask = Union[tasks.Task, AuthorsTask]


def check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise TaskError(f"convention {convention!r} is not geoprobe|authors; pass --convention geoprobe or authors")


def task_convention(task: Any) -> Convention:
    """``"authors"`` for the authors' tasks, else ``"geoprobe"``."""
    return getattr(task, "convention", "geoprobe")


def make_task(name: str, convention: str = "geoprobe", **params: Any) -> AnyTask:
    """A task by name and convention with only the parameters given (others at the convention's defaults)."""
    check_convention(convention)
    if convention == "authors":
        return make_authors_task(name, **params)
    return tasks.make_task(name, **params)


def task_from_dict(d: dict) -> AnyTask:
    """A task from its stored dict (a run.json's ``task``; no ``convention`` key: geoprobe's)."""
    d = dict(d)
    return make_task(d.pop("name"), **d)


__all__ = ["AnyTask", "CONVENTIONS", "Convention", "check_convention", "make_task", "task_convention", "task_from_dict"]
