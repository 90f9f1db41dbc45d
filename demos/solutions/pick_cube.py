"""PickCube-v1: pick the cube, carry it to the goal, hold still."""

from demos.primitives import carry_to, grasp_target, pick, table_boxes
from demos.stages import CLOSED, MoveTo, Settle, Solution

SOLUTION = Solution(
    env_id="PickCube-v1",
    robots=("panda",),
    stages=pick(grasp_target("cube", "cube_half_size")) + (MoveTo("carry", carry_to("cube", lambda env, idx: env.goal_pos[idx]), CLOSED), Settle()),
    obstacles=table_boxes,
)
