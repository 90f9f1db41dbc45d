"""PickCube-v1: pick the cube, carry it to the goal, hold still."""

from demos.primitives import attr, carry_to, grasp_target, pick, table_boxes
from demos.stages import CLOSED, MoveTo, Settle, Solution

SOLUTION = Solution(
    env_id="PickCube-v1",
    robots=("panda", "ur5e"),
    stages=pick(grasp_target("cube", "cube_half_size")) + (MoveTo("carry", carry_to("cube", attr("goal_pos")), CLOSED), Settle()),
    obstacles=table_boxes,
)
