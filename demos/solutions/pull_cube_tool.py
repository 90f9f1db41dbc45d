"""PullCubeTool-v1: grasp the tool's handle near its end, lift it, carry it unturned until its
hook lies just beyond the cube, lower it, then draw it straight back along its own length until
the cube lies well within reach (5 cm inside the success radius).

The tool is never turned: it starts pointing away from the base (+x), and the cube, within 20
degrees of that direction as seen from the base, comes within reach along it as well. A hand that
keeps its orientation is what a position-only controller (pd_ee_delta_pos) can follow."""

from __future__ import annotations


import torch

from demos.primitives import box_of, grasp_at, lift, offset_pose, place_at, pose_of, pre_grasp, scene, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution
from envs.core.pose import axis_angle_to_quat, quat_apply

GRIP_AT = 0.03  # the grasp's distance along the handle from its near end (m)
HANDLE_HALF = (0.01, 0.025, 0.025)  # the part of the handle between the fingers
HOOK_FACE = 0.15  # the hook's inner face, along the tool's x
CUBE_LOCAL_Y = 0.065  # where the cube sits across the hook (its free part spans y 0.025 to 0.1)
CLEARANCE = 0.01  # between the cube's corner and the hook as the hook comes down
# the tool's height above its rest while carried: held near its end, it pivots in the fingertips
# and its hook, 15 cm out, drops up to 6 cm (0.3 rad) below the level pose
RAISE = 0.12
SETTLE_Z = 0.003
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


def _hooked(raise_by: float):
    """Value: the tool's pose (k, 7) pointing as it does now, its hook's face CLEARANCE beyond
    the cube's farthest corner, the cube across the hook, raised by raise_by."""

    def value(env, idx):
        cube = pose_of("cube")(env, idx)
        x = _along_tool(env, idx)
        y = torch.stack((-x[:, 1], x[:, 0], torch.zeros_like(x[:, 0])), 1)
        corners = torch.tensor([[sx, sy, 0.0] for sx in (-1, 1) for sy in (-1, 1)]) * env.cube_half_size
        reach = (quat_apply(cube[:, None, 3:].expand(-1, 4, 4), corners.expand(len(idx), 4, 3)) * x[:, None]).sum(2).amax(1)
        origin = cube[:, :3] - (HOOK_FACE - reach - CLEARANCE)[:, None] * x - CUBE_LOCAL_Y * y
        origin[:, 2] = env.tool_half_size[2] + SETTLE_Z + raise_by
        yaw = torch.atan2(x[:, 1], x[:, 0])
        return torch.cat((origin, axis_angle_to_quat(yaw[:, None] * torch.tensor([0.0, 0.0, 1.0]))), 1)

    return value


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
        MoveTo("carry", place_at("l_shape_tool", _hooked(RAISE)), CLOSED),
        MoveTo("lower", place_at("l_shape_tool", _hooked(0.0)), CLOSED, screw_only=True),
        MoveTo("pull", place_at("l_shape_tool", _pulled), CLOSED, screw_only=True),
        Settle(),
    ),
    obstacles=scene(table_boxes, _cube_obstacle),
    # the farthest cubes need a long carry and a long pull: about one planned pull in twenty passes
    # the task's 100 steps, so demos are recorded with 120, as ManiSkill's own demos run past the limit
    max_episode_steps=120,
)
