"""StackCube-v1: pick cubeA (fingers clear of cubeB), lift, set it on cubeB, let go.

ManiSkill's episodes last 50 control steps: the grips are short and the lift low to fit."""

from demos.primitives import attr, box_of, carry_to, grasp_target, lift, position_of, pre_grasp, raised, scene, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution

GRASP = grasp_target("cubeA", "cube_half_sizes", clear_of=position_of("cubeB"))

SOLUTION = Solution(
    env_id="StackCube-v1",
    robots=("panda", "ur5e"),
    stages=(
        MoveTo("reach", pre_grasp(GRASP, 0.03), OPEN),
        MoveTo("approach", GRASP, OPEN, screw_only=True),
        Grip("grasp", CLOSED, steps=5),
        MoveTo("lift", lift(0.05), CLOSED, screw_only=True),
        MoveTo("place", carry_to("cubeA", raised(attr("goal_pos"), 0.003)), CLOSED),
        Grip("release", OPEN, steps=1),  # the targets open; Settle holds them open and ends at success
        Settle(),
    ),
    obstacles=scene(table_boxes, box_of("cubeB", "cube_half_sizes")),
)
