"""PushCube-v1: closed fingers behind the cube, push it along the table into the goal region.

The push is planned to leave the cube 7 cm short of the region's centre; the fingers' gap to the
cube's face leaves it 8-8.5 cm short, inside the 10 cm radius. Pushing it to the centre would
carry the fingers beyond the Panda's reach at table height for cubes drawn at the far side."""

from demos.primitives import attr, push, table_boxes
from demos.stages import Settle, Solution

SHORT_OF_CENTRE = 0.07

SOLUTION = Solution(
    env_id="PushCube-v1",
    robots=("panda", "ur5e"),
    stages=push("cube", attr("goal_pos"), attr("push_point"), overshoot=-SHORT_OF_CENTRE, lean=(0.80, 20.0)) + (Settle(),),
    obstacles=table_boxes,
)
