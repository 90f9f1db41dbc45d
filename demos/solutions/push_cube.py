"""PushCube-v1: closed fingers behind the cube, push it along the table onto the goal."""

from demos.primitives import attr, push, table_boxes
from demos.stages import Settle, Solution

SOLUTION = Solution(
    env_id="PushCube-v1",
    robots=("panda", "ur5e"),
    stages=push("cube", attr("goal_pos"), attr("push_point")) + (Settle(),),
    obstacles=table_boxes,
)
