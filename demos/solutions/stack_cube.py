"""StackCube-v1: pick cubeA (fingers clear of cubeB), lift, set it on cubeB, let go.

The grips are short so that most stacks fit ManiSkill's 50 control steps; demos are recorded
with a 100-step limit, as ManiSkill's own motion-planning demos run past the task's."""

from demos.primitives import (
    advance,
    away_from_robot,
    attr,
    box_of,
    carry_to,
    far_first,
    first_reachable,
    grasp_target,
    lift,
    position_of,
    pre_grasp,
    raised,
    scene,
    table_boxes,
    tilted,
    yawed,
)

from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution, TURN_LIMIT

GRASP = grasp_target("cubeA", "cube_half_sizes", clear_of=position_of("cubeB"))
# where the wrist cannot reach a grasp or a placing, the cube's symmetry gives others: the hand
# turned half a turn, then a quarter turn either way, about the vertical; for a cube at the far
# edge of the arm's reach, the hand then leans out, its wrist back towards the robot. Where cubeB
# is at that edge, the grasp leans first, towards cubeB: the placing keeps the grip, so the
# leaning hand sets the cube down level where an upright one could not reach
TURNS = (0.0, 180.0, 90.0, -90.0)
LEAN = 25.0
FAR = 0.78  # m from the robot's base: cubeB beyond it is placed with a leaning hand
GRASPS = far_first(
    first_reachable(*(yawed(GRASP, t) for t in TURNS), *(tilted(yawed(GRASP, t), LEAN, away_from_robot("cubeA")) for t in TURNS)),
    first_reachable(*(tilted(yawed(GRASP, t), LEAN, away_from_robot("cubeB")) for t in TURNS), *(yawed(GRASP, t) for t in TURNS)),
    position_of("cubeB"), FAR,
)
PLACE = carry_to("cubeA", raised(attr("goal_pos"), 0.003))

SOLUTION = Solution(
    env_id="StackCube-v1",
    robots=("panda", "ur5e"),
    stages=(
        MoveTo("reach", pre_grasp(GRASPS, 0.03), OPEN),
        MoveTo("approach", advance(0.03), OPEN, screw_only=True),
        Grip("grasp", CLOSED, steps=5),
        MoveTo("lift", lift(0.05), CLOSED, screw_only=True),
        MoveTo("place", first_reachable(*(yawed(PLACE, t) for t in TURNS)), CLOSED),
        Grip("release", OPEN, steps=1),  # the targets open; Settle holds them open and ends at success
        Settle(),
    ),
    obstacles=scene(table_boxes, box_of("cubeB", "cube_half_sizes")),
    turn_limit=TURN_LIMIT,
    max_episode_steps=100,  # about a third of planned stacks (40-58 steps) pass the task's 50
)
