"""LiftPegUpright-v1: grasp the lying peg at its centre across its width, lift it clear, turn it
upright (the gripper horizontal), set its lower end on the table, let go."""

from demos.primitives import attr, grasp_at, lift, pick, pose_of, stand_upright, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution, TURN_LIMIT

CLEAR = 0.16  # lift: the turning peg's corners (12.3 cm from its centre) then clear the table
# the gripper's final approach, degrees from the direction away from the robot's base: not
# across it (90), where the peg's local y would end across the table's x and ManiSkill's
# Euler-angle success test (atan2(-R01, R00) near +-pi/2) becomes ill-defined
TURNS = (45.0, -45.0)


def _half_length(margin: float):
    return lambda env, idx: env.peg_half_sizes[idx, 0] + margin


SOLUTION = Solution(
    env_id="LiftPegUpright-v1",
    robots=("panda",),
    # the peg lies rolled a quarter turn about its axis: its local z is the horizontal width
    stages=pick(grasp_at(pose_of("peg"), attr("peg_half_sizes"), axes=(1, 2)))
    + (
        MoveTo("lift", lift(CLEAR), CLOSED, screw_only=True),
        MoveTo("turn", stand_upright("peg", turns=TURNS), CLOSED),
        MoveTo("lower", stand_upright("peg", _half_length(-0.002), turns=TURNS), CLOSED, screw_only=True),
        Grip("steady", CLOSED, steps=3),  # pressed flat on the table, the arm at rest: let go
        Grip("release", OPEN),
        Settle(steps=40, hold=8),  # the released peg may rock for a moment on its end
    ),
    obstacles=table_boxes,
    turn_limit=TURN_LIMIT,
    max_episode_steps=150,  # the task's 50 steps (2.5 s) are too few for a planned pick and turn
)
