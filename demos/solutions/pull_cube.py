"""PullCube-v1: closed fingers beyond the cube, draw it back along the table into the goal region,
stopping, as PushCube-v1's push does, with the cube short of the region's centre."""

from demos.primitives import attr, push, table_boxes
from demos.solutions.push_cube import SHORT_OF_CENTRE
from demos.stages import Settle, Solution

SOLUTION = Solution(
    env_id="PullCube-v1",
    robots=("panda", "ur5e"),
    stages=push("cube", attr("goal_pos"), attr("push_point"), overshoot=-SHORT_OF_CENTRE) + (Settle(),),
    obstacles=table_boxes,
)
