"""One solution per task; `SOLUTIONS` maps env ids to them."""

from demos.solutions import (
    draw_svg,
    draw_triangle,
    lift_peg_upright,
    peg_insertion_side,
    pick_cube,
    place_sphere,
    plug_charger,
    pull_cube,
    pull_cube_tool,
    push_cube,
    stack_cube,
    stack_pyramid,
)
from demos.stages import Solution

SOLUTIONS: dict[str, Solution] = {
    s.env_id: s
    for s in (
        pick_cube.SOLUTION,
        push_cube.SOLUTION,
        pull_cube.SOLUTION,
        stack_cube.SOLUTION,
        lift_peg_upright.SOLUTION,
        peg_insertion_side.SOLUTION,
        plug_charger.SOLUTION,
        draw_triangle.SOLUTION,
        draw_svg.SOLUTION,
        place_sphere.SOLUTION,
        stack_pyramid.SOLUTION,
        pull_cube_tool.SOLUTION,
    )
}


def solution_for(env_id: str) -> Solution:
    if env_id not in SOLUTIONS:
        raise ValueError(f"no motion-planning solution for {env_id}; tasks with one: {', '.join(sorted(SOLUTIONS))}")
    return SOLUTIONS[env_id]
