"""PushCube-v1: closed fingers behind the cube, push it along the table into the goal region.

The push stops with the cube 6 cm short of the region's centre (4 cm inside its 10 cm radius):
pushing it all the way to the centre would carry the fingers beyond the arm's reach for cubes
drawn at the table's far side."""

from demos.primitives import attr, push, table_boxes
from demos.stages import Settle, Solution

SHORT_OF_CENTRE = 0.07

SOLUTION = Solution(
    env_id="PushCube-v1",
    robots=("panda", "ur5e"),
    stages=push("cube", attr("goal_pos"), attr("push_point"), overshoot=-SHORT_OF_CENTRE) + (Settle(),),
    obstacles=table_boxes,
)
