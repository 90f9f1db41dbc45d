"""PullCubeTool-v1: grasp the tool's handle near its end, lift it, carry it unturned until its
hook lies just beyond the cube, lower it, then draw it straight back along its own length until
the cube lies well within reach (5 cm inside the success radius).

The tool is never turned: it starts pointing away from the base (+x), and the cube, within 20
degrees of that direction as seen from the base, comes within reach along it as well.

Held off the table by its end, the tool pivots in the fingertips (pads 17.5 x 18.5 mm; its
centre of mass lies 11 cm farther along): its hook hangs down by some 15 to 25 degrees, or
hardly at all, as the contacts hold. Nothing assumes how far: the carry turns the hand about its
closing axis until the tool, as it hangs now, is level (the fingers leaning towards the hook,
the wrist back, which also reaches farther), or past that when the far cubes need more reach;
a tool still hanging hook down is let down farther out by what its pitch draws the hook's inner
edge in, and the table presses it level in the fingers as the hand comes down. The hand then
keeps its orientation through the lowering and the pull."""

from __future__ import annotations

import math

import torch

from demos.grasp import frame_of
from demos.primitives import box_of, commanded_tcp, grasp_at, lift, offset_pose, place_at, pose_of, pre_grasp, scene, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution
from envs.core.pose import axis_angle_to_quat, pose_inv, pose_mul, quat_apply

# the grasp's distance along the handle from its near end (m): near the end keeps the hand close
# to the base when the hook is beyond the farthest cubes (a grasp 4 cm farther along, where the
# tool hardly pivots, leaves one such cube in eight out of reach)
GRIP_AT = 0.03
HANDLE_HALF = (0.01, 0.025, 0.025)  # the part of the handle between the fingers
HOOK_FACE = 0.15  # the hook's inner face, along the tool's x
CUBE_LOCAL_Y = 0.065  # where the cube sits across the hook (its free part spans y 0.025 to 0.1)
CLEARANCE = 0.01  # between the cube's corner and the hook as the hook comes down
# the tool's height above its rest while carried: high enough for a hook hanging 35 degrees down
# to pass over the cube, as it hangs when a position-only controller keeps the hand top-down
RAISE = 0.16
SETTLE_Z = 0.003
# the hand's extra tilts tried in turn for the carry, past the one that levels the tool (deg), and
# the most it may lean
CARRY_TILTS = (0.0, 10.0, 20.0, 30.0)
MAX_TILT = 45.0
PULL_TO = 0.55  # the cube's distance from the base when the pull ends (success: < 0.6)


def _handle(env, idx) -> torch.Tensor:
    return offset_pose(pose_of("l_shape_tool"), lambda env, idx: torch.tensor([GRIP_AT, 0.0, 0.0]).expand(len(idx), 3))(env, idx)


GRASP = grasp_at(_handle, lambda env, idx: torch.tensor(HANDLE_HALF).expand(len(idx), 3), axes=(1,))


def _along_tool(env, idx) -> torch.Tensor:
    """(k, 3) the horizontal unit direction of the tool's length (its x axis), as it lies now."""
    tool = pose_of("l_shape_tool")(env, idx)
    x = quat_apply(tool[:, 3:], torch.tensor([1.0, 0.0, 0.0]).expand(len(idx), 3)).clone()
    x[:, 2] = 0
    return x / x.norm(dim=1, keepdim=True)


def _tilted_grip(env, idx, tilt: torch.Tensor) -> torch.Tensor:
    """(k, 7) the commanded TCP in the tool's frame with the hand turned about its closing axis
    by `tilt` (k,) (rad; positive: the fingers lean towards the hook, the wrist back) from top-down
    over the level tool; the grasp point as measured now (the tool pivots about it)."""
    held = env.l_shape_tool.pose()[idx]
    grip = pose_mul(pose_inv(held), commanded_tcp(env, idx))
    closing = quat_apply(grip[:, 3:], torch.tensor([0.0, 1.0, 0.0]).expand(len(idx), 3)).clone()
    closing[:, 2] = 0  # the pivot turns the hand about this axis only; flattened against drift
    approach = torch.stack((tilt.sin(), torch.zeros_like(tilt), -tilt.cos()), 1)
    return torch.cat((grip[:, :3], frame_of(approach, closing)), 1)


def _pitch(env, idx) -> torch.Tensor:
    """(k,) the tool's pitch now (rad; positive: the hook down)."""
    tool = pose_of("l_shape_tool")(env, idx)
    x = quat_apply(tool[:, 3:], torch.tensor([1.0, 0.0, 0.0]).expand(len(idx), 3))
    return torch.asin((-x[:, 2]).clamp(-1.0, 1.0))


def _hand_tilt(env, idx) -> torch.Tensor:
    """(k,) the hand's tilt now about its closing axis (rad; positive: the fingers towards the hook)."""
    approach = quat_apply(commanded_tcp(env, idx)[:, 3:], torch.tensor([0.0, 0.0, 1.0]).expand(len(idx), 3))
    return torch.atan2((approach * _along_tool(env, idx)).sum(1), -approach[:, 2])


def _pitch_margin(env, idx) -> torch.Tensor:
    """(k,) how far the tool's pitch (hook down) draws the hook's inner bottom edge in towards
    the grasp, against the level tool: the hook must come down this much farther out."""
    down = _pitch(env, idx).clamp_min(0.0)
    grip = _tilted_grip(env, idx, torch.zeros(len(idx)))
    along = HOOK_FACE - grip[:, 0]  # the edge from the grasp point, along and below the tool
    below = env.tool_half_size[2] + grip[:, 2]
    return along * (1 - down.cos()) + below * down.sin()


def _hooked(raise_by: float):
    """Value: the tool's pose (k, 7) level and pointing as it does now, its hook's face CLEARANCE
    (and its pitch margin) beyond the cube's farthest corner, the cube across the hook, raised by
    raise_by."""

    def value(env, idx):
        cube = pose_of("cube")(env, idx)
        x = _along_tool(env, idx)
        y = torch.stack((-x[:, 1], x[:, 0], torch.zeros_like(x[:, 0])), 1)
        corners = torch.tensor([[sx, sy, 0.0] for sx in (-1, 1) for sy in (-1, 1)]) * env.cube_half_size
        reach = (quat_apply(cube[:, None, 3:].expand(-1, 4, 4), corners.expand(len(idx), 4, 3)) * x[:, None]).sum(2).amax(1)
        beyond = reach + CLEARANCE + _pitch_margin(env, idx)
        origin = cube[:, :3] - (HOOK_FACE - beyond)[:, None] * x - CUBE_LOCAL_Y * y
        origin[:, 2] = env.tool_half_size[2] + SETTLE_Z + raise_by
        yaw = torch.atan2(x[:, 1], x[:, 0])
        return torch.cat((origin, axis_angle_to_quat(yaw[:, None] * torch.tensor([0.0, 0.0, 1.0]))), 1)

    return value


def _carried(goal):
    """Target: the TCP that puts the tool at goal(env, idx), level, as candidates (k, C, 7) in
    order: the hand tilted just enough to level the tool as it now hangs, then tilted farther by
    each of CARRY_TILTS (a forward-leaning hand reaches farther: the far cubes need it)."""

    def target(env, idx, adapter):
        level = _hand_tilt(env, idx) + _pitch(env, idx)  # the tilt that turns the hanging tool level
        goal_pose = goal(env, idx)
        tilts = [(level + math.radians(extra)).clamp(0.0, math.radians(MAX_TILT)) for extra in CARRY_TILTS]
        return torch.stack([pose_mul(goal_pose, _tilted_grip(env, idx, t)) for t in tilts], 1)

    return target


def _kept_tilt(goal):
    """Target: the TCP, turned as it is now, that puts the tool, were it level, at goal(env, idx)."""

    def target(env, idx, adapter):
        return pose_mul(goal(env, idx), _tilted_grip(env, idx, _hand_tilt(env, idx)))

    return target


def _pulled(env, idx) -> torch.Tensor:
    """The tool's pose (k, 7) moved straight back along its length until the cube, pushed by the
    hook, would lie PULL_TO from the base (the hook first closes its clearance)."""
    tool = pose_of("l_shape_tool")(env, idx).clone()
    x = _along_tool(env, idx)
    d = pose_of("cube")(env, idx)[:, :3] - env.agent.root_pose[idx, :3]
    d[:, 2] = 0
    ahead = (d * x).sum(1)  # |d - s x| = PULL_TO, solved for the smaller s
    distance = ahead - (PULL_TO**2 - (d * d).sum(1) + ahead**2).clamp_min(0).sqrt() + CLEARANCE + 0.005
    tool[:, :3] -= distance[:, None] * x
    return tool


def _cube_obstacle(env, idx):
    return box_of("cube", "cube_half_size")(env, idx)


SOLUTION = Solution(
    env_id="PullCubeTool-v1",
    robots=("panda",),
    stages=(
        MoveTo("reach", pre_grasp(GRASP, 0.03), OPEN),
        MoveTo("approach", GRASP, OPEN, screw_only=True),
        Grip("grasp", CLOSED, steps=5),
        MoveTo("lift", lift(RAISE), CLOSED, screw_only=True),
        MoveTo("carry", _carried(_hooked(RAISE)), CLOSED),
        MoveTo("lower", _kept_tilt(_hooked(0.0)), CLOSED, screw_only=True),
        MoveTo("pull", place_at("l_shape_tool", _pulled), CLOSED, screw_only=True),
        Settle(),
    ),
    obstacles=scene(table_boxes, _cube_obstacle),
    # the farthest cubes need a long carry and a long pull: about one planned pull in twenty passes
    # the task's 100 steps, so demos are recorded with 120, as ManiSkill's own demos run past the limit
    max_episode_steps=120,
)
