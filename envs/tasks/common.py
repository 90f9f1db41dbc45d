"""Scene pieces several tasks share: the table, objects and fixtures built from boxes, goal
markers, and the robot's place at the table.

Objects and fixtures are lists of `Part`s (a box at a pose in the actor's frame) so a motion
planner can read the exact collision geometry a task built. Visual shapes are added only when
`world.visual` is True: state-only scenes need no Vulkan device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import sapien
import torch

from envs.core.agent import Agent
from envs.core.env import BatchRNG
from envs.core.pose import quat_apply
from envs.core.world import ActorGroup, BatchedWorld

# ManiSkill 3.0.1's TableSceneBuilder (mani_skill/utils/scene_builder/table/scene_builder.py): a
# "table-workspace" whose one collision box, turned a quarter about z, spans x in
# [-0.7245, 0.4845], y in [-1.209, 1.209] and z in [-TABLE_HEIGHT, 0]; the ground under it
TABLE_HEIGHT = 0.9196429
# a quarter turn about z; 0.70710683 (not cos(pi/4) rounded down) is the float32 that PhysX's
# normalisation keeps, so the table's pose in the state never moves by an ulp
TABLE_POSE = sapien.Pose([-0.12, 0.0, -TABLE_HEIGHT], [0.70710683, 0.0, 0.0, 0.70710683])
TABLE_BOX_HALF = (2.418 / 2, 1.209 / 2, TABLE_HEIGHT / 2)  # in the table actor's frame
TABLE_CENTRE = (-0.12, 0.0, -TABLE_HEIGHT / 2)  # the box's centre in the env frame
TABLE_HALF = (1.209 / 2, 2.418 / 2, TABLE_HEIGHT / 2)  # the box's half extents along the env's axes
GROUND_Z = -0.91964293  # ManiSkill's ground altitude: minus the table model's height
GROUND_HALF = (2.0, 2.0, 0.01)  # a finite ground per env: an infinite plane would pair with every body
ROBOT_ROOT = sapien.Pose([-0.615, 0.0, 0.0])  # the Panda's base on the table, facing +x

Color = tuple[float, float, float, float]


def _material(color: Color) -> sapien.render.RenderMaterial:
    return sapien.render.RenderMaterial(base_color=list(color))


def build_table(world: BatchedWorld) -> ActorGroup:
    """ManiSkill's table scene: "table-workspace" (top at z = 0, its collision box and pose as
    TableSceneBuilder builds them, drawn as that box) and a static "ground" under it. ManiSkill
    builds the table kinematic, which puts it in the env state; ours is static (a kinematic table
    made restored states replay differently in SAPIEN's CPU PhysX) and is put in the env state alike."""

    def table(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        box = sapien.Pose([0.0, 0.0, TABLE_HEIGHT / 2])
        b.add_box_collision(box, half_size=list(TABLE_BOX_HALF))
        if world.visual:
            b.add_box_visual(box, half_size=list(TABLE_BOX_HALF), material=_material((0.55, 0.42, 0.3, 1)))
        return b.build_static(name=f"table-workspace_{i}")

    def ground(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        b.add_box_collision(half_size=list(GROUND_HALF))
        if world.visual:
            b.add_box_visual(half_size=list(GROUND_HALF), material=_material((0.4, 0.4, 0.42, 1)))
        return b.build_static(name=f"ground_{i}")

    group = world.add_actor("table-workspace", table, TABLE_POSE, in_state=True)
    world.add_actor("ground", ground, sapien.Pose([0.0, 0.0, GROUND_Z - GROUND_HALF[2]]))
    return group


@dataclass(frozen=True)
class Part:
    """One box of an actor: half sizes (m) at `pose` in the actor's frame. `collision` / `visual`
    say which shapes it gets (e.g. one collision box drawn as two differently coloured halves)."""

    half_size: tuple[float, float, float]
    pose: sapien.Pose = sapien.Pose()
    color: Color = (0.6, 0.6, 0.6, 1.0)
    collision: bool = True
    visual: bool = True
    density: float | None = None  # kg/m^3; None: the actor's


def build_parts(
    world: BatchedWorld,
    name: str,
    parts: Callable[[int], Sequence[Part]],
    body: str = "dynamic",
    density: float = 1000.0,
    local_pose: sapien.Pose = sapien.Pose(),
) -> ActorGroup:
    """One actor per env made of env i's `parts(i)`; body is "dynamic", "kinematic" or "static".

    No per-body solver settings: PhysX's CPU solver does not keep envs with different
    iteration counts apart. Measured: giving held objects 25 position iterations (to stop the
    box fingers sinking ~3 mm into them) changed a far env's arm velocity by 8e-3 rad/s whenever
    another env touched its object. Such a change belongs to the whole scene.

    A fixture whose pose is randomised per episode is kinematic: it never moves by itself, and
    its pose belongs to the simulator state (static actors are left out of the state)."""
    if body not in ("dynamic", "kinematic", "static"):
        raise ValueError(f"unknown body type {body!r}; allowed: dynamic, kinematic, static")

    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        for part in parts(i):
            if part.collision:
                b.add_box_collision(part.pose, half_size=list(part.half_size), density=part.density or density)
            if world.visual and part.visual:
                b.add_box_visual(part.pose, half_size=list(part.half_size), material=_material(part.color))
        b.set_physx_body_type(body)
        return b.build(name=f"{name}_{i}")

    return world.add_actor(name, build, local_pose)


def build_box(
    world: BatchedWorld,
    name: str,
    half_size: tuple[float, float, float],
    color: Color,
    kinematic: bool = False,
) -> ActorGroup:
    body = "kinematic" if kinematic else "dynamic"
    parts = [Part(half_size, color=color)]
    return build_parts(world, name, lambda i: parts, body, local_pose=sapien.Pose([0, 0, half_size[2]]))


def build_sphere(world: BatchedWorld, name: str, radius: float, color: Color) -> ActorGroup:
    """A dynamic ball of `radius` (density 1000) resting on the table at the env origin."""

    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        b.add_sphere_collision(radius=radius)
        if world.visual:
            b.add_sphere_visual(radius=radius, material=_material(color))
        return b.build(name=f"{name}_{i}")

    return world.add_actor(name, build, sapien.Pose([0.0, 0.0, radius]))


def peg_parts(half_size: tuple[float, float, float], head: Color, tail: Color) -> list[Part]:
    """A box peg along its local x: one collision box, drawn as a head half (+x) and a tail half."""
    hx, hy, hz = half_size
    half = (hx / 2, hy, hz)
    return [
        Part(half_size, visual=False),
        Part(half, sapien.Pose([hx / 2, 0, 0]), head, collision=False),
        Part(half, sapien.Pose([-hx / 2, 0, 0]), tail, collision=False),
    ]


def plate_with_slots(
    x: tuple[float, float],
    y: tuple[float, float],
    z: tuple[float, float],
    slots: Sequence[tuple[float, float]],
    slot_half_z: float,
    color: Color,
) -> list[Part]:
    """Boxes filling the block x × y × z except for rectangular through-slots along x, each at
    (y centre, half width) with |z| <= slot_half_z: a box with a hole, a wall with a socket."""

    def box(x0, x1, y0, y1, z0, z1) -> Part:
        c = sapien.Pose([(x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2])
        return Part(((x1 - x0) / 2, (y1 - y0) / 2, (z1 - z0) / 2), c, color)

    parts = [box(*x, *y, z[0], -slot_half_z), box(*x, *y, slot_half_z, z[1])]  # below, above
    edges = [y[0]] + [e for c, h in sorted(slots) for e in (c - h, c + h)] + [y[1]]
    for y0, y1 in zip(edges[::2], edges[1::2]):  # the columns between slots
        if y1 > y0:
            parts.append(box(*x, y0, y1, -slot_half_z, slot_half_z))
    return parts


TARGET_RED: Color = (194 / 255, 19 / 255, 22 / 255, 1.0)
WHITE: Color = (1.0, 1.0, 1.0, 1.0)
# a pose's orientation that turns a target's axis (its local x) to the table normal: a quarter
# turn about y
TARGET_FLAT_Q = (0.7071068, 0.0, 0.7071068, 0.0)


def build_red_white_target(world: BatchedWorld, name: str, radius: float, thickness: float) -> ActorGroup:
    """A goal region as ManiSkill draws one: five concentric discs about the actor's local x,
    red and white by turns from the red rim inwards (radii radius, 4/5, 3/5, 2/5 and 1/5 of it),
    each 1e-5 m thicker than the one outside it so that it shows on top. A kinematic actor with no
    collision shape, so its pose is part of the env state under `name`; seen by every camera. Pose
    it with `TARGET_FLAT_Q` to lay it on the table."""

    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        if world.visual:
            for k in range(5):
                color = TARGET_RED if k % 2 == 0 else WHITE
                b.add_cylinder_visual(radius=radius * (5 - k) / 5, half_length=thickness / 2 + k * 1e-5, material=_material(color))
        b.set_physx_body_type("kinematic")
        return b.build(name=f"{name}_{i}")

    return world.add_actor(name, build, sapien.Pose())


def build_goal_site(world: BatchedWorld, name: str, radius: float, color: Color, disc: bool = False) -> ActorGroup:
    """A goal as ManiSkill marks one: a kinematic actor with no collision shape, so its pose is
    part of the env state under `name`, drawn (visual worlds only) as a sphere of `radius`, or a
    1 mm disc on the table with `disc`, and hidden from observation cameras."""

    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        if world.visual:
            if disc:  # SAPIEN cylinders lie along local x: stand it along z
                b.add_cylinder_visual(sapien.Pose(q=[0.7071068, 0.0, 0.7071068, 0.0]), radius, 0.0005, _material(color))
            else:
                b.add_sphere_visual(radius=radius, material=_material(color))
        b.set_physx_body_type("kinematic")
        return b.build(name=f"{name}_{i}")

    world.hidden.add(name)
    return world.add_actor(name, build, sapien.Pose())


def spawn_apart(
    rng: BatchRNG,
    low: Sequence[float],
    high: Sequence[float],
    radius: torch.Tensor,
    count: int,
    trials: int = 100,
) -> list[torch.Tensor]:
    """`count` points (n, d) drawn one after another uniform in [low, high), as ManiSkill's
    UniformPlacementSampler draws them for one env: the first as drawn; each later one redrawn up
    to `trials` times until it lies farther than 2 radius from every earlier point, else 0. Each
    env stops drawing at its own first success, as ManiSkill's one env does."""
    placed = [rng.uniform(low, high, (len(low),))]
    n = len(placed[0])
    apart = radius + radius  # float32, as ManiSkill adds the two radii
    for _ in range(1, count):
        point = torch.zeros(n, len(low))
        pending = torch.ones(n, dtype=torch.bool)
        for _ in range(trials):
            rows = pending.nonzero().flatten()
            if len(rows) == 0:
                break
            draw = rng.uniform(low, high, (len(low),), where=pending)  # (len(rows), d)
            ok = torch.ones(len(rows), dtype=torch.bool)
            for earlier in placed:
                ok &= (draw - earlier[rows]).norm(dim=1) > apart
            point[rows[ok]] = draw[ok]
            pending[rows[ok]] = False
        placed.append(point)
    return placed


def place(group: ActorGroup, env_idx: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> None:
    """Put env_idx's actors at rest at pos (n, 3) with orientation quat (n, 4), env-local."""
    group.set_pose(torch.cat((pos, quat), 1), env_idx)
    group.set_velocity(torch.zeros(len(env_idx), 6), env_idx)


# the table scene's starting joints where they are not the robot's rest keyframe: ManiSkill's
# TableSceneBuilder turns a lone panda_wristcam's hand the other way (joint 7 at -pi/4)
TABLE_SCENE_QPOS = {
    "panda_wristcam": (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, -math.pi / 4, 0.04, 0.04),
}


def table_scene_qpos(
    agent: Agent,
    rng: BatchRNG,
    noise: float = 0.02,
    qpos: Sequence[float] | None = None,
    alone: bool = True,
) -> torch.Tensor:
    """(n, dof) float32: ManiSkill's table-scene start for the envs being initialised: `qpos`,
    else the robot's rest keyframe (for a robot `alone` at the table, the table scene's own joints
    where TABLE_SCENE_QPOS names them), plus N(0, noise) drawn for every joint from the numpy
    stream, the joints outside the arm (fingers) then put back; computed in float64 as ManiSkill
    computes it."""
    if qpos is None:
        qpos = TABLE_SCENE_QPOS.get(agent.spec.uid, agent.spec.rest_qpos) if alone else agent.spec.rest_qpos
    base = torch.tensor(qpos, dtype=torch.float64)
    out = base + rng.numpy_normal(noise, (len(base),))  # (n, dof)
    keep = torch.ones(len(base), dtype=torch.bool)
    keep[agent.arm] = False
    out[:, keep] = base[keep]
    return out.float()


def reset_robot(
    agent: Agent,
    env_idx: torch.Tensor,
    rng: BatchRNG,
    noise: float = 0.02,
    qpos: Sequence[float] | None = None,
) -> None:
    """Put a robot alone at the table at its table-scene start (`table_scene_qpos`), at rest."""
    agent.reset_to(table_scene_qpos(agent, rng, noise, qpos), env_idx)


def reset_robots(agents: Sequence[Agent], env_idx: torch.Tensor, rng: BatchRNG, noise: float = 0.02) -> None:
    """Several robots at the table: ManiSkill's table scene draws one start (each robot's rest
    keyframe plus one noise draw) and gives it to every robot; a robot whose rest keyframe differs
    from the first's draws its own."""
    drawn: dict[tuple[float, ...], torch.Tensor] = {}
    for agent in agents:
        key = tuple(agent.spec.rest_qpos)
        if key not in drawn:
            drawn[key] = table_scene_qpos(agent, rng, noise, alone=False)
        agent.reset_to(drawn[key], env_idx)


def nearest_axis_point(pose: torch.Tensor, half_length: torch.Tensor, point: torch.Tensor) -> torch.Tensor:
    """(N, 3): the point of a peg's axis (its local x, |x| <= half_length (N,)) nearest to point (N, 3)."""
    axis = quat_apply(pose[:, 3:], torch.tensor([1.0, 0.0, 0.0]).expand(len(pose), 3))
    t = ((point - pose[:, :3]) * axis).sum(1).clamp(-half_length, half_length)
    return pose[:, :3] + t[:, None] * axis


def local_point(pose: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """(N, 3): the point at offset (N, 3) in the frame pose (N, 7)."""
    return pose[:, :3] + quat_apply(pose[:, 3:], offset)


def object_goal_obs(tcp: torch.Tensor, obj_pose: torch.Tensor, goal_pos: torch.Tensor) -> dict[str, torch.Tensor]:
    """The extra observations of a task that brings one object to a goal point: TCP pose (N, 7),
    goal (N, 3), object pose (N, 7) and the offsets TCP -> object and object -> goal (N, 3)."""
    return {
        "tcp_pose": tcp,
        "goal_pos": goal_pos,
        "obj_pose": obj_pose,
        "tcp_to_obj_pos": obj_pose[:, :3] - tcp[:, :3],
        "obj_to_goal_pos": goal_pos - obj_pose[:, :3],
    }
