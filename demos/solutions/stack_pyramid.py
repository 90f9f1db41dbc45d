"""StackPyramid-v1: set cubeA beside cubeB (turned to cubeB's yaw, on the side the fingers leave
free and away from cubeC), then cubeC across the two, its fingers closing across the pair.

Each placement comes from above and ends with a straight descent to a few mm over its rest; the
gripper leaves cubeA straight up before it turns to cubeC."""

from __future__ import annotations

import math

import torch

from demos.primitives import box_of, grasp_at, lift, place_at, pose_of, pre_grasp, scene, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution, TURN_LIMIT
from envs.core.pose import axis_angle_to_quat, quat_apply, quat_mul

HALF = 0.02
GAP = 2 * HALF + 0.004  # cubeA's centre from cubeB's: 4 mm apart
DROP = 0.003  # each cube is let go this far above its rest
ABOVE = 0.05  # placements descend the last 5 cm straight down
CUBES = ("cubeA", "cubeB", "cubeC")
# the open fingers reach ~5 cm from the grasped cube's centre and a neighbour's corner up to 2.8 cm
# from its own: a neighbour farther than this cannot be touched, and the grasp keeps the hand
# nearest its rest yaw (turning less: a position-only controller, which cannot turn the hand,
# then follows more demos)
CLEAR_WITHIN = 0.09


def _axis(q: torch.Tensor, k: int) -> torch.Tensor:
    """(n, 3) the horizontal unit direction of local axis k of orientations q (n, 4)."""
    v = quat_apply(q, torch.eye(3)[k].expand(len(q), 3)).clone()
    v[:, 2] = 0
    return v / v.norm(dim=1, keepdim=True).clamp_min(1e-6)


def _angle(v: torch.Tensor) -> torch.Tensor:
    return torch.atan2(v[:, 1], v[:, 0])


def _wrap(a: torch.Tensor, period: float) -> torch.Tensor:
    """a into [-period / 2, period / 2)."""
    return torch.remainder(a + period / 2, period) - period / 2


def _turn(yaw: torch.Tensor) -> torch.Tensor:
    return axis_angle_to_quat(yaw[:, None] * torch.tensor([0.0, 0.0, 1.0]))


def _nearest_other(obj: str):
    """Value: the centre (k, 3) of the cube nearest `env.<obj>` (the one its open fingers must clear)."""

    def value(env, idx):
        me = pose_of(obj)(env, idx)[:, :3]
        others = torch.stack([pose_of(o)(env, idx)[:, :3] for o in CUBES if o != obj], 1)  # (k, 2, 3)
        nearest = (others - me[:, None]).norm(dim=2).argmin(1)
        return others[torch.arange(len(idx)), nearest]

    return value


def _grasp(obj: str, depth: float = 0.0):
    half = lambda env, idx: env.cube_half_sizes[idx]  # noqa: E731
    return grasp_at(pose_of(obj), half, depth=depth, clear_of=_nearest_other(obj), clear_within=CLEAR_WITHIN)


def _beside_b(env, idx) -> torch.Tensor:
    """cubeA's pose (k, 7) resting GAP from cubeB: turned (by at most 45 degrees) to cubeB's yaw,
    on the side of cubeB along the gripper's free axis (its fingers then stay clear of cubeB),
    whichever of the two lies farther from cubeC."""
    a, b, c = (pose_of(o)(env, idx) for o in CUBES)
    turn = _turn(_wrap(_angle(_axis(b[:, 3:], 0)) - _angle(_axis(a[:, 3:], 0)), math.pi / 2))
    free = quat_apply(turn, _axis(env.agent.tcp_pose[idx, 3:], 0))  # the TCP's x, turned with cubeA
    sides = torch.stack((b[:, :3] + GAP * free, b[:, :3] - GAP * free), 1)  # (k, 2, 3)
    far = (sides[..., :2] - c[:, None, :2]).norm(dim=2).argmax(1)
    pos = sides[torch.arange(len(idx)), far]
    pos[:, 2] = HALF + DROP
    return torch.cat((pos, quat_mul(turn, a[:, 3:])), 1)


def _across(env, idx) -> torch.Tensor:
    """cubeC's pose (k, 7) resting on cubeA and cubeB midway between them, turned (by at most 90
    degrees) so that the fingers close across the pair's long side: square to the A-B line."""
    a, b, c = (pose_of(o)(env, idx) for o in CUBES)
    line = a[:, :3] - b[:, :3]
    line[:, 2] = 0
    closing = _axis(env.agent.tcp_pose[idx, 3:], 1)
    turn = _turn(_wrap(_angle(line) + math.pi / 2 - _angle(closing), math.pi))
    pos = (a[:, :3] + b[:, :3]) / 2
    pos[:, 2] = 3 * HALF + DROP  # on the two cubes' tops
    return torch.cat((pos, quat_mul(turn, c[:, 3:])), 1)


def _raised(goal, dz: float):
    def value(env, idx):
        g = goal(env, idx).clone()
        g[:, 2] += dz
        return g

    return value


def _loose_cubes(env, idx):
    """cubeA and cubeC as obstacles while more than 7 cm from the TCP: not while held, nor while
    the fingers close in on them."""
    tcp = env.agent.tcp_pose[idx, :3]
    out = [[] for _ in range(len(idx))]
    for obj in ("cubeA", "cubeC"):
        far = (pose_of(obj)(env, idx)[:, :3] - tcp).norm(dim=1) > 0.07
        boxes = box_of(obj, "cube_half_sizes")(env, idx)
        for k in range(len(idx)):
            if far[k]:
                out[k] += boxes[k]
    return out


def _place(obj: str, goal, name: str, straight: bool = True) -> tuple:
    return (
        MoveTo(f"carry {name}", place_at(obj, _raised(goal, ABOVE)), CLOSED),
        # the held cube can end a long carry a centimetre or two off (lag, slip in the grip): aim
        # again from where it is, so that the descent is straight down and misses the cubes below
        MoveTo(f"re-aim {name}", place_at(obj, _raised(goal, ABOVE)), CLOSED, screw_only=True),
        MoveTo(f"lower {name}", place_at(obj, goal), CLOSED, screw_only=straight),
        Grip(f"release {name}", OPEN, steps=3),
    )


GRASP_A, GRASP_C = _grasp("cubeA"), _grasp("cubeC", depth=0.01)

SOLUTION = Solution(
    env_id="StackPyramid-v1",
    robots=("panda",),
    stages=(
        MoveTo("reach A", pre_grasp(GRASP_A, 0.04), OPEN),
        MoveTo("approach A", GRASP_A, OPEN, screw_only=True),
        Grip("grasp A", CLOSED, steps=5),
        MoveTo("lift A", lift(0.05), CLOSED, screw_only=True),
        *_place("cubeA", _beside_b, "A"),
        # high enough that cubeA (more than 7 cm from the TCP) is an obstacle on the way to cubeC
        MoveTo("leave A", lift(0.08), OPEN, screw_only=True),
        MoveTo("reach C", pre_grasp(GRASP_C, 0.04), OPEN),
        MoveTo("approach C", GRASP_C, OPEN, screw_only=True),
        Grip("grasp C", CLOSED, steps=5),
        MoveTo("lift C", lift(0.08), CLOSED, screw_only=True),
        # where the wrist cannot follow the straight line down, a planned path to the same pose
        *_place("cubeC", _across, "C", straight=False),
        Settle(hold=3),  # cubeC comes to rest on two cubes: end off the edge of "static", so replays reproduce it
    ),
    obstacles=scene(table_boxes, box_of("cubeB", "cube_half_sizes"), _loose_cubes),
    turn_limit=TURN_LIMIT,
)
