"""N environments on SAPIEN's CPU PhysX: one system for all, the envs spaced apart on a grid (the
default), or one PhysX system per env (isolated).

A shared system steps all envs in one PhysX call (1.4-1.7x the env-steps/s of one system per env
at N = 64, `python -m benchmarks.batching`); the envs cannot touch, every env sitting far from
every other, but an env's last bits then depend on its place on the grid and on the other envs in
the batch (`python -m benchmarks.coupling`). Isolated envs are bit-identical whatever batch they
run in. All poses that leave this module are env-local: the env's grid offset (zero when isolated)
is subtracted, so env i sees the same numbers whatever N is.

Entities are registered per env by name; `ActorGroup` and `ArticulationGroup` read and write
one quantity for all N envs at once as (N, ...) torch tensors.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Iterable

import numpy as np
import sapien
import torch

from envs.core.pose import pose_mul

SPACING = 5.0  # metres between neighbouring env origins: no task reaches that far
ROW = 16  # envs per row; env i's origin depends on i alone, never on N


@dataclass(frozen=True)
class PhysicsConfig:
    """PhysX settings of a world. The defaults are ManiSkill 3.0.1's (its SceneConfig and
    DefaultMaterialsConfig), which every task under a ManiSkill id must simulate with.

    `isolated` gives every env its own PhysX system, all at the origin, instead of one system
    holding every env on a grid. An isolated env's physics is then a function of its own state and
    actions alone: it does not depend on which other envs share the batch, nor on its place in it
    (`python -m benchmarks.coupling`: zero difference in any batch, against up to ~1 in a state
    number on a shared system). A shared system is faster, so it is the default; demonstrations
    are made and replayed isolated (`demos generate` stores the setting in the file's env kwargs).
    """

    solver_position_iterations: int = 15
    solver_velocity_iterations: int = 1
    sleep_threshold: float = 0.005
    contact_offset: float = 0.02
    rest_offset: float = 0.0
    bounce_threshold: float = 2.0
    enable_pcm: bool = True
    enable_tgs: bool = True
    enable_ccd: bool = False
    enable_enhanced_determinism: bool = False
    enable_friction_every_iteration: bool = True
    static_friction: float = 0.3
    dynamic_friction: float = 0.3
    restitution: float = 0.0
    isolated: bool = False

    def __post_init__(self) -> None:
        if self.solver_position_iterations < 1 or self.solver_velocity_iterations < 0:
            raise ValueError("solver_position_iterations must be >= 1 and solver_velocity_iterations >= 0")
        if self.contact_offset <= self.rest_offset:
            raise ValueError(f"contact_offset ({self.contact_offset}) must exceed rest_offset ({self.rest_offset})")

    @classmethod
    def parse(cls, value: "PhysicsConfig | dict | None") -> "PhysicsConfig":
        """A config from None (the defaults), a config, or a dict of fields (unknown ones refused)."""
        if value is None or isinstance(value, cls):
            return value or cls()
        unknown = sorted(set(value) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown physics settings {unknown}; allowed: {', '.join(cls.__dataclass_fields__)}")
        return cls(**value)

    def dict(self) -> dict:
        return asdict(self)

    def apply(self) -> None:
        """Sets SAPIEN's process-wide PhysX configs, which systems, bodies and shapes take when they
        are created: call it before building a world's systems and entities."""
        sapien.physx.set_scene_config(
            bounce_threshold=self.bounce_threshold, enable_pcm=self.enable_pcm, enable_tgs=self.enable_tgs,
            enable_ccd=self.enable_ccd, enable_enhanced_determinism=self.enable_enhanced_determinism,
            enable_friction_every_iteration=self.enable_friction_every_iteration,
        )
        sapien.physx.set_body_config(
            solver_position_iterations=self.solver_position_iterations,
            solver_velocity_iterations=self.solver_velocity_iterations, sleep_threshold=self.sleep_threshold,
        )
        sapien.physx.set_shape_config(contact_offset=self.contact_offset, rest_offset=self.rest_offset)
        sapien.physx.set_default_material(self.static_friction, self.dynamic_friction, self.restitution)


def pose_rows(poses: Iterable[sapien.Pose]) -> np.ndarray:
    """(n, 7) float32 [p, q] of SAPIEN poses, in the world frame. A Pose's state is its 7 numbers:
    reading it is 3x faster than [*p.p, *p.q]."""
    return np.array([p.__getstate__() for p in poses], dtype=np.float32)


def _idx(env_idx: torch.Tensor | None, n: int) -> list[int]:
    return list(range(n)) if env_idx is None else env_idx.tolist()


def _env_local(rows: np.ndarray, offsets: torch.Tensor) -> torch.Tensor:
    """(N, 7) world-frame poses of env i's objects -> env-local (each env's grid offset removed)."""
    out = torch.from_numpy(rows)
    out[:, :3] -= offsets
    return out


class Clock:
    """Counts changes to the scene; readings are cached until it moves."""

    def __init__(self) -> None:
        self.version = 0

    def tick(self) -> None:
        self.version += 1


class _Cached:
    def __init__(self, clock: Clock):
        self._clock = clock
        self._cache: dict[str, tuple[int, torch.Tensor]] = {}

    def cached(self, key: str, read: Callable[[], torch.Tensor]) -> torch.Tensor:
        hit = self._cache.get(key)
        if hit is not None and hit[0] == self._clock.version:
            return hit[1]
        value = read()
        self._cache[key] = (self._clock.version, value)
        return value


class ActorGroup(_Cached):
    """One rigid body per env (dynamic, kinematic or static)."""

    def __init__(self, name: str, entities: list[sapien.Entity], offsets: torch.Tensor, clock: Clock, in_state: bool | None = None):
        super().__init__(clock)
        self.name = name
        self.entities = entities
        self.bodies = [e.find_component_by_type(sapien.physx.PhysxRigidBaseComponent) for e in entities]
        self.dynamic = isinstance(self.bodies[0], sapien.physx.PhysxRigidDynamicComponent)
        self.in_state = self.dynamic if in_state is None else in_state  # part of the env state (see BatchedWorld.add_actor)
        self._offsets = offsets  # (N, 3)
        # a static body moves only when set_pose moves it: its pose is read once until then (not a
        # kinematic one: PhysX keeps its pose at its centre of mass, and the pose read back after a
        # step differs from the one set in the last bits)
        self._still = not self.dynamic
        self._still_pose: torch.Tensor | None = None

    def pose(self) -> torch.Tensor:  # (N, 7) env-local
        if self._still:
            if self._still_pose is None:
                self._still_pose = self._read_pose()
            return self._still_pose
        return self.cached("pose", self._read_pose)

    def _read_pose(self) -> torch.Tensor:
        return _env_local(pose_rows(e.get_pose() for e in self.entities), self._offsets)

    def set_pose(self, pose: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """pose: (len(env_idx), 7) env-local."""
        self._clock.tick()
        self._still_pose = None
        pose = pose.detach().cpu().double().numpy()
        for k, i in enumerate(_idx(env_idx, len(self.entities))):
            self.entities[i].set_pose(sapien.Pose(pose[k, :3] + self._offsets[i].double().numpy(), pose[k, 3:]))

    def velocity(self) -> torch.Tensor:  # (N, 6) linear, angular
        return self.cached("velocity", self._read_velocity)

    def _read_velocity(self) -> torch.Tensor:
        if not self.dynamic:
            return torch.zeros(len(self.bodies), 6)
        raw = np.array([[*b.get_linear_velocity(), *b.get_angular_velocity()] for b in self.bodies], dtype=np.float32)
        return torch.from_numpy(raw)

    def set_velocity(self, vel: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        if not self.dynamic:
            return
        self._clock.tick()
        vel = vel.detach().cpu().double().numpy()
        for k, i in enumerate(_idx(env_idx, len(self.bodies))):
            if not self.bodies[i].kinematic:
                self.bodies[i].set_linear_velocity(vel[k, :3])
                self.bodies[i].set_angular_velocity(vel[k, 3:])

    def state(self) -> torch.Tensor:  # (N, 13)
        return torch.cat((self.pose(), self.velocity()), 1)

    def reinsert(self, env_idx: torch.Tensor | None = None) -> None:
        """Take the bodies out of the PhysX scene and put them back: this drops the contact
        caches (persistent manifolds) of every shape pair they belong to."""
        for i in _idx(env_idx, len(self.bodies)):
            self.bodies[i].disable()
            self.bodies[i].enable()

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """A static or kinematic actor already at the state's pose (as read) is left untouched:
        writing back the float32 reading of a pose far from the origin can move it by a rounding
        step, and a fixture such as the table would then shape the contacts after a restore."""
        if not self.dynamic or all(b.kinematic for b in self.bodies):
            rows = torch.arange(len(self.entities)) if env_idx is None else torch.as_tensor(env_idx, dtype=torch.long)
            moved = (self.pose()[rows] != state[:, :7]).any(1)
            if not moved.any():
                return
            state, env_idx = state[moved], rows[moved]
        self.set_pose(state[:, :7], env_idx)
        self.set_velocity(state[:, 7:13], env_idx)


class ArticulationGroup(_Cached):
    """One articulation per env, all built from the same description."""

    def __init__(self, name: str, articulations: list, offsets: torch.Tensor, clock: Clock):
        super().__init__(clock)
        self.name = name
        self.articulations = articulations
        self.joints = [a.get_active_joints() for a in articulations]
        self.dof = articulations[0].dof
        self.links = [{l.name.split("/", 1)[-1]: l for l in a.links} for a in articulations]
        self._offsets = offsets
        # the joints' position targets as PhysX holds them (float32), kept as they are set:
        # reading them back joint by joint (each recorded step's state) costs more than the step's
        # own control
        self._targets = self.read_drive_targets().numpy()

    def _stack(self, getter: Callable) -> torch.Tensor:
        return torch.from_numpy(np.stack([getter(a) for a in self.articulations]).astype(np.float32))

    def qpos(self) -> torch.Tensor:  # (N, dof)
        return self.cached("qpos", lambda: self._stack(lambda a: a.get_qpos()))

    def qvel(self) -> torch.Tensor:  # (N, dof)
        return self.cached("qvel", lambda: self._stack(lambda a: a.get_qvel()))

    def set_qpos(self, qpos: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        self._clock.tick()
        q = qpos.detach().cpu().numpy().astype(np.float32)
        for k, i in enumerate(_idx(env_idx, len(self.articulations))):
            self.articulations[i].set_qpos(q[k])

    def set_qvel(self, qvel: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        self._clock.tick()
        q = qvel.detach().cpu().numpy().astype(np.float32)
        for k, i in enumerate(_idx(env_idx, len(self.articulations))):
            self.articulations[i].set_qvel(q[k])

    def drive_targets(self) -> torch.Tensor:  # (N, dof)
        return torch.from_numpy(self._targets.copy())

    def read_drive_targets(self) -> torch.Tensor:  # (N, dof) from PhysX, what drive_targets() mirrors
        return torch.tensor([[j.get_drive_target()[0] for j in js] for js in self.joints], dtype=torch.float32)

    def drive_velocity_targets(self) -> torch.Tensor:  # (N, dof)
        return torch.tensor([[j.get_drive_velocity_target()[0] for j in js] for js in self.joints], dtype=torch.float32)

    def set_drive_targets(
        self, targets: torch.Tensor, env_idx: torch.Tensor | None = None, joints: list[int] | None = None
    ) -> None:
        """targets: (len(env_idx), len(joints)); joints are indices into the active joints.
        Only the targets that change are handed to PhysX (a gripper's stay put for most of a
        demo), but at least one per articulation, since setting a target also wakes it."""
        envs = _idx(env_idx, len(self.articulations))
        cols = np.arange(self.dof) if joints is None else np.asarray(joints)
        if not len(envs) or not len(cols):
            return
        rows = slice(None) if env_idx is None else np.asarray(envs)[:, None]
        # PhysX stores a target as float32, rounded to nearest as NumPy rounds it
        new = targets.detach().cpu().numpy().astype(np.float32).reshape(len(envs), len(cols))
        changed = new != self._targets[rows, cols]
        changed[:, 0] |= ~changed.any(1)
        self._per_joint(new.tolist(), envs, cols.tolist(), lambda joint, v: joint.set_drive_target(v), only=changed)
        self._targets[rows, cols] = new

    def set_drive_velocity_targets(
        self, targets: torch.Tensor, env_idx: torch.Tensor | None = None, joints: list[int] | None = None
    ) -> None:
        """As set_drive_targets, for the drives' velocity targets."""
        self._per_joint(targets.detach().cpu().tolist(), _idx(env_idx, len(self.articulations)),
                        list(range(self.dof)) if joints is None else joints,
                        lambda joint, v: joint.set_drive_velocity_target(v))

    def _per_joint(self, values: list[list[float]], envs, cols: list[int], set_one: Callable,
                   only: np.ndarray | None = None) -> None:
        """set_one(joint, value) for row k of values on articulation envs[k], column c on active
        joint cols[c]; `only`: a (rows, columns) mask of the values to set (default: every one)."""
        for k, i in enumerate(envs):
            js, row = self.joints[i], values[k]
            for c in range(len(cols)) if only is None else np.flatnonzero(only[k]).tolist():
                set_one(js[cols[c]], row[c])

    def root_pose(self) -> torch.Tensor:  # (N, 7) env-local
        return _env_local(pose_rows(a.get_root_pose() for a in self.articulations), self._offsets)

    def link_pose(self, link: str) -> torch.Tensor:  # (N, 7) env-local
        return _env_local(pose_rows(ls[link].get_entity_pose() for ls in self.links), self._offsets)

    def state(self) -> torch.Tensor:
        """(N, 13 + 2 dof) as ManiSkill's Articulation.get_state: root pose (p, q wxyz), root
        linear and angular velocity, qpos, qvel. Roots are fixed, so their velocity is zero."""
        return torch.cat((self.root_pose(), torch.zeros(len(self.articulations), 6), self.qpos(), self.qvel()), 1)

    def set_root_pose(self, pose: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """pose: (len(env_idx), 7) env-local."""
        self._clock.tick()
        pose = pose.detach().cpu().double().numpy()
        for k, i in enumerate(_idx(env_idx, len(self.articulations))):
            self.articulations[i].set_root_pose(sapien.Pose(pose[k, :3] + self._offsets[i].double().numpy(), pose[k, 3:]))

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """state: (len(env_idx), 13 + 2 dof) as `state` gives it. Drive targets are not part of it."""
        d = self.dof
        if state.shape[1] != 13 + 2 * d:
            raise ValueError(f"articulation {self.name}: state has {state.shape[1]} columns; expected 13 + 2 * {d} dof")
        self.set_root_pose(state[:, :7], env_idx)
        self.set_qpos(state[:, 13 : 13 + d], env_idx)
        self.set_qvel(state[:, 13 + d : 13 + 2 * d], env_idx)


class BatchedWorld:
    """Owns the PhysX systems and every per-env entity, in creation order.

    An isolated world (`PhysicsConfig.isolated`) gives env i its own PhysX system and SAPIEN scene,
    `scenes[i]`, with every env at the origin. Otherwise all envs share one PhysX CPU system, spaced
    on a grid: a state-only world puts every env in one SAPIEN scene; a visual world gives each env
    its own SAPIEN scene (`scenes[i]`) on the shared system. A visual world gives each scene its own
    render system, so env i's cameras see env i alone; a render system shared by all envs would make
    every camera draw all N envs (half the env-steps/s at N = 16, a quarter at N = 32).
    """

    def __init__(self, num_envs: int, sim_freq: int, visual: bool = False, first_index: int = 0,
                 physics: PhysicsConfig | dict | None = None):
        """first_index: the global index of env 0 (a worker of a parallel env holds a slice)."""
        self.num_envs = num_envs
        self.first_index = first_index
        self.visual = visual  # build visual shapes (needs a render system and a Vulkan device)
        self.physics = PhysicsConfig.parse(physics)
        self.physics.apply()
        count = num_envs if self.physics.isolated else 1
        self.systems = [sapien.physx.PhysxCpuSystem() for _ in range(count)]
        for system in self.systems:
            system.timestep = 1.0 / sim_freq
        self.physx = self.systems[0]
        if visual:
            from envs.sensors.vulkan import render_system  # only visual worlds touch Vulkan

            self.scenes = [sapien.Scene([self.systems[i % count], render_system()]) for i in range(num_envs)]
        elif self.physics.isolated:
            self.scenes = [sapien.Scene([system]) for system in self.systems]
        else:
            self.scenes = [sapien.Scene([self.physx])] * num_envs
        self.scene = self.scenes[0]  # env 0's scene; build env i's entities in scenes[i]
        self.offsets = torch.tensor(
            [[(i % ROW) * SPACING, (i // ROW) * SPACING, 0.0] for i in range(first_index, first_index + num_envs)],
            dtype=torch.float32,
        )
        if self.physics.isolated:
            self.offsets.zero_()  # every env alone at the origin: its numbers do not depend on its index
        self.clock = Clock()
        self.actors: dict[str, ActorGroup] = {}
        self.articulations: dict[str, ArticulationGroup] = {}
        self.hidden: set[str] = set()  # actors observation cameras must not see (goal sites); render cameras do
        self.paused: set[int] = set()  # isolated envs whose physics is not stepped (see `pause`)

    def world_pose(self, i: int, local: sapien.Pose) -> sapien.Pose:
        return sapien.Pose(local.p + self.offsets[i].numpy(), local.q)

    def add_actor(
        self, name: str, build: Callable[[sapien.Scene, int], sapien.Entity], local_pose: sapien.Pose, in_state: bool | None = None
    ) -> ActorGroup:
        """`build(scene, i)` builds env i's entity in `scene` (env i's); it is then placed at
        `local_pose` in env i. The env state holds every non-static actor, as ManiSkill's; with
        `in_state` a static one too (a fixture ManiSkill builds kinematic, such as its table)."""
        entities = []
        for i in range(self.num_envs):
            entity = build(self.scenes[i], i)
            entity.set_pose(self.world_pose(i, local_pose))
            entities.append(entity)
        group = ActorGroup(name, entities, self.offsets, self.clock, in_state)
        self.actors[name] = group
        return group

    def add_articulation(self, name: str, build: Callable[[sapien.Scene, int, sapien.Pose], object], local_pose: sapien.Pose) -> ArticulationGroup:
        arts = [build(self.scenes[i], i, self.world_pose(i, local_pose)) for i in range(self.num_envs)]
        group = ArticulationGroup(name, arts, self.offsets, self.clock)
        self.articulations[name] = group
        return group

    def pause(self, env_idx: list[int]) -> None:
        """Stops stepping these envs' physics, in an isolated world (elsewhere envs share a system
        and this does nothing): an env whose episode is over then costs no simulation, and the
        others step exactly as they would, each alone in its system. A paused env's state stays
        where it stopped until `resume` (an env reset resumes the envs it resets)."""
        if self.physics.isolated:
            self.paused.update(env_idx)

    def resume(self, env_idx: list[int]) -> None:
        self.paused.difference_update(env_idx)

    def step(self) -> None:
        for i, system in enumerate(self.systems):
            if i not in self.paused:
                system.step()
        self.clock.tick()

    def state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """ManiSkill's sim state: "actors" holds every non-static actor's (N, 13) state (pose
        p and wxyz q, linear and angular velocity; kinematic actors such as goal sites too, and
        static ones added `in_state`),
        "articulations" every articulation's (N, 13 + 2 dof). "drive_targets" holds each
        articulation's (N, dof) joint position targets: ours, which ManiSkill's set_sim_state
        ignores, and what makes a restored state step exactly as the recorded one did."""
        return {
            "actors": {n: a.state() for n, a in self.actors.items() if a.in_state},
            "articulations": {n: a.state() for n, a in self.articulations.items()},
            "drive_targets": {n: a.drive_targets() for n, a in self.articulations.items()},
        }

    def set_state_dict(self, state: dict[str, dict[str, torch.Tensor]], env_idx: torch.Tensor | None = None) -> None:
        """Restore what `state_dict` gives; other top-level groups are ignored, and an
        articulation without "drive_targets" (a ManiSkill state) gets its targets at its qpos.

        Every actor, static ones too, is first re-inserted into the PhysX scene. PhysX keeps
        per-pair contact caches that no API exposes, so without this the history being
        overwritten shapes the steps after a restore (cubes resting on the table, an arm
        scraping the table, replayed differently depending on what ran before). Articulations
        never touch each other, so every pair involves an actor and all caches go."""
        for group, known in (("actors", self.actors), ("articulations", self.articulations)):
            unknown = sorted(set(state.get(group, {})) - set(known))
            if unknown:
                raise ValueError(f"state names {group} {', '.join(unknown)} this env does not have; it has: {', '.join(known)}")
        for group in self.actors.values():
            group.reinsert(env_idx)
        for n, s in state.get("actors", {}).items():
            self.actors[n].set_state(torch.as_tensor(s, dtype=torch.float32), env_idx)
        targets = state.get("drive_targets", {})
        for n, s in state.get("articulations", {}).items():
            art = self.articulations[n]
            s = torch.as_tensor(s, dtype=torch.float32)
            art.set_state(s, env_idx)
            t = targets.get(n)
            art.set_drive_targets(torch.as_tensor(t, dtype=torch.float32) if t is not None else s[:, 13 : 13 + art.dof], env_idx)
