"""Shared pydantic base: unknown keys are errors, so a typo in a matrix never passes silently."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    # allow_inf_nan=False: a `.nan` threshold would compare False with everything and pass silently
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)
