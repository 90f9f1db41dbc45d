"""StackCube-v1: pick cube A (fingers clear of B), lift, set it on B, let go."""

from demos.primitives import attr, box_of, carry_to, grasp_target, lift, pick, position_of, raised, scene, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution

SOLUTION = Solution(
    env_id="StackCube-v1",
    robots=("panda", "ur5e"),
    stages=pick(grasp_target("cube_a", "cube_half_sizes", clear_of=position_of("cube_b")))
    + (
        MoveTo("lift", lift(0.05), CLOSED, screw_only=True),
        MoveTo("place", carry_to("cube_a", raised(attr("goal_pos"), 0.003)), CLOSED),
        Grip("release", OPEN),
        Settle(),
    ),
    obstacles=scene(table_boxes, box_of("cube_b", "cube_half_sizes")),
)
