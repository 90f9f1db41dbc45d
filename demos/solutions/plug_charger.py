"""PlugCharger-v1: grasp the charger's base from above across its width, behind its centre (so
the hand stays clear of the receptacle's top edge), lift, hold the prongs on the slots' axis a
few cm out, re-aim in place from the measured pose with the arm at rest until the prongs are
on the axis, then push home slowly in short straight steps, re-aimed the same way before each."""

import torch

from demos.primitives import attr, first_reachable, grasp_at, insert, lift, parts_of, pick, pose_of, scene, table_boxes, yawed
from demos.stages import CLOSED, MoveTo, Settle, Solution, TURN_LIMIT
from envs.core.pose import pose_mul
from envs.tasks.plug_charger import BASE_HALF

# the grasp point on the base's axis, in the charger's frame (the face is x = 0; the base ends
# at -0.04): the hand then stays clear of the receptacle and the fingertips still wholly on the
# base. At -0.03, ManiSkill's fingertip boxes met the receptacle at the end of the push in the
# planner's model in some attempts (217 of 224 attempts succeeded, against 220 of the same here)
GRASP_X = -0.032
SLOW = 0.3  # the pushes into the slots, as a fraction of full speed


def press(env, idx):  # (k,): the final target 3 mm past the goal, the face pressed on the wall's
    # (where friction in the slots leaves the charger is not repeatable; a face held against a face is)
    return torch.full((len(idx),), 0.003)


def grasp_pose(env, idx):  # (k, 7)
    offset = torch.tensor([GRASP_X, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]).expand(len(idx), 7)
    return pose_mul(env.charger.pose()[idx], offset)


def grasp_half(env, idx):  # (k, 3): the part of the base the fingers hold
    return torch.tensor([0.01, BASE_HALF[1], BASE_HALF[2]]).expand(len(idx), 3)


GRASP = grasp_at(grasp_pose, grasp_half, axes=(1,), placed=(pose_of("charger"), attr("goal_pose")))

SOLUTION = Solution(
    env_id="PlugCharger-v1",
    robots=("panda",),
    # the grasp that leaves the wrist nearest its rest at the goal, else the other one of the base
    stages=pick(first_reachable(GRASP, yawed(GRASP, 180.0)))
    + (MoveTo("lift", lift(0.08), CLOSED, screw_only=True),)
    # distances before the goal along its x: the prongs' tips (16 mm ahead of the charger's
    # frame) 3.1 cm out, then re-aimed from the measured pose 6 mm out and twice 3 mm out (in
    # place: the second corrects what the arm's sag did to the first), then pushed in slowly,
    # re-aimed 6 and 12 mm in: at speed the arm lags its straight line by more than the slots'
    # 0.5 mm clearance
    + insert("charger", attr("goal_pose"), press, approach=0.05,
             steps=(0.025, 0.022, 0.022, (0.013, SLOW), (0.007, SLOW)), speed=SLOW)
    + (Settle(steps=10, hold=3),),
    obstacles=scene(table_boxes, parts_of("receptacle", "receptacle_parts")),
    turn_limit=TURN_LIMIT,
)
