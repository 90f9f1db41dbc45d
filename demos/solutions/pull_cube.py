"""PullCube-v1: closed fingers beyond the cube, draw it back along the table onto the goal."""

from demos.primitives import attr, push, table_boxes
from demos.stages import Settle, Solution

SOLUTION = Solution(
    env_id="PullCube-v1",
    robots=("panda", "ur5e"),
    stages=push("cube", attr("goal_pos"), attr("push_point")) + (Settle(),),
    obstacles=table_boxes,
)
