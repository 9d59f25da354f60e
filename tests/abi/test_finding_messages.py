"""Finding messages: each URL printed once, and a reference that speaks for the package it is about."""

from __future__ import annotations

import re
from pathlib import Path

from envbuilder.abi import rules
from envbuilder.abi.rules import Subject
from envbuilder.lock import read_lock
from envbuilder.lock.model import Facets, LockedPackage, Source

LOCKS = Path(__file__).parents[2] / "locks"


def test_known_issue_url_is_printed_once():
    for path in LOCKS.glob("*.lock.toml"):
        for finding in read_lock(path).findings:
            urls = re.findall(r"https?://\S+?(?=[)\]\s,;]|$)", finding)
            assert len(urls) == len(set(urls)), finding


def _subject(name: str, torch: str) -> Subject:
    return Subject(LockedPackage(name=name, version="1.0", source=Source()),
                   Facets(torch=torch, cuda="12.9", cxx11_abi=True, evidence="knowledge"))


def test_abi_torch_reference_is_never_another_projects_issue():
    torch = Subject(LockedPackage(name="torch", version="2.10.0", source=Source()),
                    Facets(torch="2.10", cuda="12.8", cxx11_abi=True, evidence="knowledge"))
    [sgl] = rules.consumer_abi(_subject("sgl-kernel", "2.9"), torch, None)
    assert sgl.rule == "abi-torch" and sgl.reference is None
    [own] = rules.consumer_abi(_subject("sgl-kernel", "2.9"), torch, "https://pypi.org/project/sgl-kernel/0.3.21/")
    assert own.reference == "https://pypi.org/project/sgl-kernel/0.3.21/"
    [fa] = rules.consumer_abi(_subject("flash-attn", "2.8"), torch, None)
    assert "flash-attention" in fa.reference
