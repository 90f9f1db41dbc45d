"""Primitives shared by solutions: what to read from a task, obstacles for the planner, and targets
and stage sequences for reach, grasp, lift, carry, push, turn upright and insert.

A `Value` reads one per-env quantity of the envs `idx` from the env (a pose, a point, a size); a
`Target` gives the TCP poses a `MoveTo` plans to. Both are plain functions of the env state when
a stage starts, so they see where earlier stages really left things.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence, Union

import torch

from demos.grasp import GraspAdapter, offset_along_approach, top_down_grasp
from demos.planner import Box
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Stage
from envs.core.pose import axis_angle_to_quat, matrix_to_quat, pose_inv, pose_mul, quat_angle, quat_apply, quat_conj, quat_mul
from envs.tasks.common import TABLE_CENTRE, TABLE_HALF, Part

Value = Callable[[object, torch.Tensor], torch.Tensor]  # (env, idx) -> (len(idx), D)
Target = Callable[[object, torch.Tensor, GraspAdapter], torch.Tensor]  # -> (len(idx), 7) TCP poses
Obstacles = Callable[[object, torch.Tensor], list[list[Box]]]

IDENTITY_Q = (1.0, 0.0, 0.0, 0.0)


# ---- reading the task ---------------------------------------------------------------------------
def attr(name: str) -> Value:
    """`env.<name>` (a tensor with a leading N, or one shared by all envs, or a method returning
    either), for the envs idx."""

    def value(env, idx: torch.Tensor) -> torch.Tensor:
        v = getattr(env, name)
        v = torch.as_tensor(v() if callable(v) else v, dtype=torch.float32)
        return v.expand(env.num_envs, *v.shape)[idx] if v.ndim == 1 else v[idx]

    return value


def const(values: Sequence[float]) -> Value:
    """The same values for every env."""
    return lambda env, idx: torch.tensor(values, dtype=torch.float32).expand(len(idx), len(values))


def pose_of(obj: str) -> Value:
    """The pose (k, 7) of actor group `env.<obj>`."""
    return lambda env, idx: getattr(env, obj).pose()[idx]


def position_of(obj: str) -> Value:
    return lambda env, idx: getattr(env, obj).pose()[idx, :3]


def raised(point: Value, dz: float) -> Value:
    """point(env, idx) (k, 3) raised by dz (m)."""
    return lambda env, idx: point(env, idx) + torch.tensor([0.0, 0.0, dz])


def offset_pose(frame: Value, xyz: Callable[[object, torch.Tensor], torch.Tensor]) -> Value:
    """The pose at local translation xyz(env, idx) (k, 3) in frame(env, idx) (k, 7), same orientation."""

    def value(env, idx):
        f = frame(env, idx)
        local = torch.cat((xyz(env, idx), torch.tensor(IDENTITY_Q).expand(len(idx), 4)), 1)
        return pose_mul(f, local)

    return value


def along_x(distance: Callable[[object, torch.Tensor], torch.Tensor]) -> Callable[[object, torch.Tensor], torch.Tensor]:
    """Local offsets (k, 3) of distance(env, idx) (k,) along x."""
    return lambda env, idx: torch.nn.functional.pad(distance(env, idx)[:, None], (0, 2))


def rest_tcp_q(env, idx: torch.Tensor) -> torch.Tensor:
    """The TCP orientation at the robot's rest keyframe, in the env frame (k, 4)."""
    agent = env.agent
    rest = torch.tensor(agent.spec.rest_qpos).expand(len(idx), -1)
    return pose_mul(agent.root_pose[idx], agent.tcp_pose_root(rest))[:, 3:]


# ---- obstacles ----------------------------------------------------------------------------------
def table_boxes(env, idx: torch.Tensor) -> list[list[Box]]:
    """The table (slightly lowered so resting objects' contacts are not collisions)."""
    x, y, z = TABLE_CENTRE
    table = Box("table", (x, y, z - 0.002, *IDENTITY_Q), TABLE_HALF)
    return [[table] for _ in range(len(idx))]


def box_of(obj: str, half_size: str, margin: float = 0.0) -> Obstacles:
    """Actor group `env.<obj>`, a box of half extents `env.<half_size>`, grown by `margin` (m)."""

    def boxes(env, idx):
        pose, half = pose_of(obj)(env, idx), attr(half_size)(env, idx) + margin
        return [[Box(obj, tuple(pose[k].tolist()), tuple(half[k].tolist()))] for k in range(len(idx))]

    return boxes


def parts_of(obj: str, parts: str) -> Obstacles:
    """The `Part`s of fixture `env.<obj>`: `env.<parts>` is one list for all envs or one per env."""

    def boxes(env, idx):
        pose, all_parts = pose_of(obj)(env, idx), getattr(env, parts)
        out = []
        for k, i in enumerate(idx.tolist()):
            own: Sequence[Part] = all_parts[i] if isinstance(all_parts[0], (list, tuple)) else all_parts
            own = [p for p in own if p.collision]
            local = torch.tensor([[*p.pose.p, *p.pose.q] for p in own], dtype=torch.float32)
            world = pose_mul(pose[k : k + 1].expand(len(own), 7), local)
            out.append([Box(f"{obj}_{j}", tuple(world[j].tolist()), tuple(p.half_size)) for j, p in enumerate(own)])
        return out

    return boxes


def scene(*sources: Obstacles) -> Obstacles:
    """All boxes of several obstacle sources."""

    def boxes(env, idx):
        per_source = [s(env, idx) for s in sources]
        return [[b for src in per_source for b in src[k]] for k in range(len(idx))]

    return boxes


# ---- targets ------------------------------------------------------------------------------------
def once_per_state(target: Target) -> Target:
    """target, evaluated once for a scene state and set of envs: the candidates built from one
    grasp (turned, tilted, in several orders) then share it instead of each computing it again."""
    last: list = [None, None]  # key, value; the key holds the env's clock itself, so no later env's is taken for it

    def value(env, idx, adapter):
        clock = env.world.clock
        key = (clock, clock.version, tuple(idx.tolist()), adapter)
        if last[0] != key:
            last[0], last[1] = key, target(env, idx, adapter)
        return last[1].clone()

    return value


def grasp_at(
    pose: Value,
    half_size: Value,
    depth: float = 0.0,
    clear_of: Value | None = None,
    axes: tuple[int, ...] = (0, 1),
    placed: tuple[Value, Value] | None = None,
    clear_within: float | None = None,
) -> Target:
    """Target: a top-down grasp of the box of half extents half_size (k, 3) at pose (k, 7), the
    fingers closing along one of its local `axes`. With `placed` = (the held object's pose now,
    its pose once placed), the grasp that also leaves the wrist nearest its rest orientation
    at the placed pose is preferred. `clear_of` (a point the open fingers must miss) counts
    only within `clear_within` (m) of the object, when given (see `top_down_grasp`)."""

    def target(env, idx, adapter):
        avoid = clear_of(env, idx) if clear_of is not None else None
        q = rest_tcp_q(env, idx)
        final = None
        if placed is not None:  # a grasp g now is goal * now^-1 * g once placed: compare g to now * goal^-1 * rest
            now, goal = placed[0](env, idx), placed[1](env, idx)
            final = quat_mul(quat_mul(now[:, 3:], quat_conj(goal[:, 3:])), q)
        return top_down_grasp(pose(env, idx), half_size(env, idx), adapter, q, depth, avoid, axes, final, clear_within)

    return once_per_state(target)


def grasp_target(obj: str, half_size: str, clear_of: Value | None = None) -> Target:
    """Target: a top-down grasp of actor group `env.<obj>` whose half extents are `env.<half_size>`."""
    return grasp_at(pose_of(obj), attr(half_size), clear_of=clear_of)


def tilted(grasp: Target, degrees: float, toward: Value) -> Target:
    """Target: grasp's TCP pose turned by `degrees` about its closing axis (y), the approach
    leaning towards the direction toward(env, idx) (k, 3): the pads keep their plane, the wrist
    above them moves back, away from that direction."""

    def target(env, idx, adapter):
        tcp = grasp(env, idx, adapter)
        d = toward(env, idx)
        best, best_lean = None, None
        for sign in (1.0, -1.0):
            turn = axis_angle_to_quat(torch.tensor([0.0, sign * math.radians(degrees), 0.0]).expand(len(idx), 3))
            q = quat_mul(tcp[:, 3:], turn)
            lean = (quat_apply(q, torch.tensor([0.0, 0.0, 1.0]).expand(len(idx), 3)) * d).sum(1)
            take = torch.ones_like(lean, dtype=torch.bool) if best is None else lean > best_lean
            best = q if best is None else torch.where(take[:, None], q, best)
            best_lean = lean if best_lean is None else torch.where(take, lean, best_lean)
        return torch.cat((tcp[:, :3], best), 1)

    return target


def yawed(target: Target, degrees: float) -> Target:
    """Target: target's TCP pose turned by `degrees` about the vertical through the TCP: for a
    grasp from above or a held box, the same grasp or placing with the hand turned (180 degrees
    swaps the fingers, 90 closes along the box's other axis)."""

    def value(env, idx, adapter):
        tcp = target(env, idx, adapter)
        turn = axis_angle_to_quat(torch.tensor([0.0, 0.0, math.radians(degrees)]).expand(len(idx), 3))
        return torch.cat((tcp[:, :3], quat_mul(turn, tcp[:, 3:])), 1)

    return value


def away_from_robot(obj: str) -> Value:
    """The horizontal direction (k, 3) from the robot's base to actor group `env.<obj>`."""

    def value(env, idx):
        d = getattr(env, obj).pose()[idx, :3] - env.agent.root_pose[idx, :3]
        d[:, 2] = 0
        return d

    return value


def pre_grasp(grasp: Target, distance: float = 0.06) -> Target:
    """Target: grasp's TCP poses (each candidate's) moved back `distance` (m) along the approach."""

    def target(env, idx, adapter):
        tcp = grasp(env, idx, adapter)
        return offset_along_approach(tcp.reshape(-1, 7), distance, adapter).reshape(tcp.shape)

    return target


def first_reachable(*targets: Target) -> Target:
    """Target: candidates (k, C, 7), planned to in order until one can be reached (an arm's
    reach and joint limits decide, say, how far a grasp may lean)."""
    return lambda env, idx, adapter: torch.stack([t(env, idx, adapter) for t in targets], 1)


def far_first(near: Target, far: Target, point: Value, reach: float) -> Target:
    """Target: the candidates of `near`, then those of `far` (each (k, C, 7), the same C); where
    point(env, idx) (k, 3) lies farther than `reach` (m) from the robot's base, `far`'s first (a
    grasp chosen for where the object must go, not only for where it is)."""

    def target(env, idx, adapter):
        a, b = near(env, idx, adapter), far(env, idx, adapter)
        beyond = (point(env, idx)[:, :2] - env.agent.root_pose[idx, :2]).norm(dim=1) > reach
        return torch.where(beyond[:, None, None], torch.cat((b, a), 1), torch.cat((a, b), 1))

    return target


def advance(distance: float) -> Target:
    """Target: the commanded TCP pose moved `distance` (m) along its approach: from a pre-grasp,
    the grasp of whichever candidate the reach went to."""

    def target(env, idx, adapter):
        return offset_along_approach(commanded_tcp(env, idx), -distance, adapter)

    return target


def carry_to(obj: str, goal: Value) -> Target:
    """Target: move the TCP so that the held `env.<obj>` lands at goal(env, idx) (k, 3), keeping
    the grip it has now."""

    def target(env, idx, adapter):
        tcp = env.agent.tcp_pose[idx]
        held = getattr(env, obj).pose()[idx]
        return torch.cat((goal(env, idx) + tcp[:, :3] - held[:, :3], tcp[:, 3:]), 1)

    return target


def commanded_tcp(env, idx: torch.Tensor) -> torch.Tensor:
    """(k, 7) where the arm's joint targets put the TCP: the drives hold a loaded arm a few mm
    short of them, so targets relative to this pose cancel that sag."""
    agent = env.agent
    return pose_mul(agent.root_pose[idx], agent.tcp_pose_root(agent.targets)[idx])


def place_at(obj: str, goal: Value) -> Target:
    """Target: move the TCP so that the held `env.<obj>` takes the pose goal(env, idx) (k, 7),
    keeping the grip measured now (so a repeated stage corrects slip and sag). The grip is taken
    relative to the commanded TCP, so the arm's own sag under the load is corrected too."""

    def target(env, idx, adapter):
        held = getattr(env, obj).pose()[idx]
        grip = pose_mul(pose_inv(held), commanded_tcp(env, idx))  # the TCP in the object's frame
        return pose_mul(goal(env, idx), grip)

    return target


def lift(height: float) -> Target:
    """Target: straight up by `height` (m) from the current TCP pose."""

    def target(env, idx, adapter):
        tcp = env.agent.tcp_pose[idx].clone()
        tcp[:, 2] += height
        return tcp

    return target


def facing(direction: Value, point: Value) -> Target:
    """Target: the TCP at point (k, 3), pointing down, its closing axis across the horizontal
    direction (k, 3) (so the closed fingers' side faces it), the yaw nearest the rest pose."""

    def target(env, idx, adapter):
        d = direction(env, idx).clone()
        d[:, 2] = 0
        across = torch.stack((-d[:, 1], d[:, 0], torch.zeros_like(d[:, 0])), 1)
        # a "grasp" of a thin plate lying across the direction: closing along the plate's y only
        plate = torch.cat((point(env, idx), _yaw_frame(across)), 1)
        half = torch.tensor([1.0, 0.001, 0.001]).expand(len(idx), 3)
        return top_down_grasp(plate, half, adapter, rest_tcp_q(env, idx))

    return once_per_state(target)


def _yaw_frame(y_axis: torch.Tensor) -> torch.Tensor:
    """Quaternions (k, 4) of frames turned about z so that their y axis is along y_axis (k, 3)."""
    yaw = torch.atan2(y_axis[:, 1], y_axis[:, 0]) - math.pi / 2
    return axis_angle_to_quat(yaw[:, None] * torch.tensor([0.0, 0.0, 1.0]))


def stand_upright(obj: str, height: Value | None = None, turns: tuple[float, float] | None = None) -> Target:
    """Target: turn the held `env.<obj>` (held with its local x across the approach) so its x is
    vertical and its centre at height(env, idx) (k,), or turning about the TCP. The object's
    free turn about its own axis is spent on the wrist: the gripper ends horizontal, its approach
    at a yaw from the outward direction in the adapter's `side_hold` range, or in `turns`
    (degrees, lo and hi) where the task cares which way the object faces."""

    def target(env, idx, adapter):
        tcp = env.agent.tcp_pose[idx]
        held = getattr(env, obj).pose()[idx]
        grip = pose_mul(pose_inv(held), tcp)  # the TCP in the object's frame
        outward = held[:, :3] - env.agent.root_pose[idx, :3]
        lo, hi, up = adapter.side_hold
        lo, hi = turns if turns is not None else (lo, hi)
        x = torch.tensor([0.0, 0.0, up]).expand(len(idx), 3)
        best, best_angle = None, None
        for turn in torch.linspace(lo, hi, 7 if turns is None else 2).tolist():  # the least turn from the grip now
            yaw = torch.atan2(outward[:, 1], outward[:, 0]) + math.radians(turn)
            approach = torch.stack((torch.cos(yaw), torch.sin(yaw), torch.zeros_like(yaw)), 1)
            q = matrix_to_quat(torch.stack((x, torch.cross(approach, x, dim=1), approach), 2))
            angle = quat_angle(q, tcp[:, 3:])
            take = torch.ones_like(angle, dtype=torch.bool) if best is None else angle < best_angle
            best = q if best is None else torch.where(take[:, None], q, best)
            best_angle = angle if best_angle is None else torch.where(take, angle, best_angle)
        tcp_q = best
        if height is None:  # turn about the TCP
            return torch.cat((tcp[:, :3], tcp_q), 1)
        obj_q = quat_mul(tcp_q, quat_conj(grip[:, 3:]))
        goal = torch.cat((held[:, :2], height(env, idx)[:, None], obj_q), 1)
        return pose_mul(goal, grip)

    return target


# ---- stage sequences ----------------------------------------------------------------------------
def pick(grasp: Target, clearance: float = 0.06) -> tuple[Stage, ...]:
    """Reach `clearance` (m) back from the grasp (or the first reachable of its candidates),
    descend, close: the opening of every pick."""
    return (
        MoveTo("reach", pre_grasp(grasp, clearance), OPEN),
        MoveTo("approach", advance(clearance), OPEN, screw_only=True),
        Grip("grasp", CLOSED),
    )


def push(
    obj: str, goal: Value, contact: Value, hover: float = 0.05, overshoot: float = 0.0,
    lean: tuple[float, float] | None = None,
) -> tuple[Stage, ...]:
    """Closed fingers lowered at `contact` (k, 3), then moved along the table by the object's
    offset to its goal (plus `overshoot` m): pushes and pulls alike. `lean` (reach m, degrees):
    where the object would end farther than `reach` from the robot's base, the hand leans by
    `degrees` into the push (fingertips ahead of the wrist), which keeps the wrist back within
    the arm's reach at table height."""

    def direction(env, idx):
        return goal(env, idx) - position_of(obj)(env, idx)

    def travel(env, idx):
        """(k, 3) the horizontal move of the push: the offset to the goal plus `overshoot` m."""
        d = direction(env, idx)
        d[:, 2] = 0
        return d * (1 + overshoot / d.norm(dim=1, keepdim=True).clamp_min(1e-6))

    def above(env, idx):
        return contact(env, idx) + torch.tensor([0.0, 0.0, hover])

    def posture(target: Target) -> Target:
        if lean is None:
            return target
        reach, degrees = lean
        leaned = tilted(target, degrees, direction)

        def value(env, idx, adapter):
            end = position_of(obj)(env, idx) + travel(env, idx)
            far = (end[:, :2] - env.agent.root_pose[idx, :2]).norm(dim=1) > reach
            return torch.where(far[:, None], leaned(env, idx, adapter), target(env, idx, adapter))

        return value

    def through(env, idx, adapter):
        tcp = env.agent.tcp_pose[idx].clone()
        tcp[:, :3] += travel(env, idx)
        return tcp

    return (
        MoveTo("reach", posture(facing(direction, above)), CLOSED),
        MoveTo("lower", posture(facing(direction, contact)), CLOSED, screw_only=True),
        MoveTo("push", through, CLOSED, screw_only=True),
    )


Distance = Union[float, Callable[[object, torch.Tensor], torch.Tensor]]  # m, or (env, idx) -> (k,)


def _distance(d: Distance) -> Callable[[object, torch.Tensor], torch.Tensor]:
    return d if callable(d) else (lambda env, idx: torch.full((len(idx),), float(d)))


def insert(
    obj: str, goal: Value, depth: Callable, approach: Distance, steps: Sequence[Distance | tuple[Distance, float]],
    steady: int = 5, speed: float = 1.0,
) -> tuple[Stage, ...]:
    """Bring the held `env.<obj>` onto the axis (local x) of goal(env, idx) (k, 7) at `approach`
    m before `depth`, re-aim from the measured pose at each of `steps` (m before depth, each
    straight; a distance repeated re-aims again in place, converging on the arm's sag), then
    push along the axis to depth(env, idx) (k,) at `speed`. Distances are metres or functions
    (env, idx) -> (k,) of them; a step given as (distance, speed) moves at that speed (slow
    where the object enters a fit: the arm lags its plan less)."""

    def before(distance: Distance) -> Value:
        d = _distance(distance)
        return offset_pose(goal, along_x(lambda env, idx: depth(env, idx) - d(env, idx)))

    stages: list[Stage] = [MoveTo("align", place_at(obj, before(approach)), CLOSED)]
    for k, step in enumerate(steps):  # the arm comes to rest first: the correction then sees its sag, not its lag
        d, v = step if isinstance(step, tuple) else (step, 1.0)
        stages += [Grip("steady", CLOSED, steps=steady), MoveTo(f"re-aim {k + 1}", place_at(obj, before(d)), CLOSED, True, v)]
    stages += [Grip("steady", CLOSED, steps=steady), MoveTo("insert", place_at(obj, before(0.0)), CLOSED, True, speed)]
    return tuple(stages)


def tip_at(point: Value) -> Target:
    """Target: the TCP at point(env, idx) (k, 3), oriented as at the robot's rest keyframe (a
    stick's tip pointing down)."""
    return lambda env, idx, adapter: torch.cat((point(env, idx), rest_tcp_q(env, idx)), 1)


def draw_through(points: str, count: int, closed: bool, height: float, hover: float = 0.05) -> tuple[Stage, ...]:
    """A drawing stick's tip above vertex 0 of `env.<points>` (N, V, 3), lowered to `height` m
    above it, then straight from vertex to vertex through the first `count` (back to vertex 0
    when `closed`), `height` m above them; the arm holds no gripper, so the gripper value is unused."""

    def vertex(k: int, dz: float) -> Value:
        return lambda env, idx: getattr(env, points)[idx, k] + torch.tensor([0.0, 0.0, dz])

    order = list(range(1, count)) + ([0] if closed else [])
    return (
        MoveTo("reach", tip_at(vertex(0, hover)), OPEN),
        MoveTo("lower", tip_at(vertex(0, height)), OPEN, screw_only=True),
        *(MoveTo(f"draw to {k}", tip_at(vertex(k, height)), OPEN, screw_only=True) for k in order),
    )
