"""One solution per task; `SOLUTIONS` maps env ids to them."""

from demos.solutions import pick_cube
from demos.stages import Solution

SOLUTIONS: dict[str, Solution] = {s.env_id: s for s in (pick_cube.SOLUTION,)}


def solution_for(env_id: str) -> Solution:
    if env_id not in SOLUTIONS:
        raise ValueError(f"no motion-planning solution for {env_id}; tasks with one: {', '.join(sorted(SOLUTIONS))}")
    return SOLUTIONS[env_id]
