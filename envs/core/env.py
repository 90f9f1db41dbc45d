"""The batched environment every task derives from.

Always batched, also for N = 1: observations, rewards and flags are (N, ...) torch tensors on
the CPU; actions are (N, A) torch or numpy arrays.

Episodes and resets
-------------------
* `reset(seed=s)` seeds env k with s + k (a list gives one seed per env), so env i reset with
  seed s starts from the same state whatever N is: ManiSkill 3.0.1's start after its one env's
  `reset(seed=s + k)` (see `BatchRNG`). Without a seed each env draws a fresh seed from the env's
  own seed source (`episode_seeds` keeps it). `options={"env_idx": idx}` resets only those envs.
* No autoreset: an env whose episode ended (terminated = success or fail, truncated = its
  elapsed steps reached max_episode_steps) keeps simulating until you reset it, e.g.
  `env.reset(options={"env_idx": torch.nonzero(done).flatten()})`.

A task subclasses `BaseEnv` and fills in a few hooks over batched state: `_load_scene`,
`_initialize_episode`, `evaluate`, `_extra_obs`, `compute_dense_reward`, and, for a task that
changes its scene as the robot acts (drawing), `_after_control_step`; `task_state` names task
tensors (such as a goal) that belong to the full state; `_default_sensor_configs` its cameras (by
default a base camera plus the robot's own); `default_physics` the PhysX settings it simulates
with where they are not ManiSkill's defaults (the `physics` argument overrides them).

Camera obs modes (sensor_data, rgb, depth, segmentation, rgbd, their "+" combinations, pointcloud) and render modes are served by
`envs.sensors` (layout in envs/sensors/suite.py); only then is a render system made.

A task without a robot (e.g. a cart-pole) sets `self.agent` (and `self.agents = [self.agent]`) to
its own actuated articulation (`name`, `qpos`, `qvel`, `sync_targets()`), overrides `_make_controller` and lists the control modes it
accepts in `supported_control_modes`; other modes get one error line naming the allowed ones.

Robots
------
A task declares `num_robots` and the robot uids it supports (`supported_robots`, the same list
for every robot). `robot_uids` is one uid, or a tuple (a list from gym.make) with one uid per
robot. `self.agents` holds the robots in that order and `self.agent` is the first (the only one
in single-robot tasks). With several robots the action is their controllers' actions
concatenated in robot order. Names follow ManiSkill: a single robot's articulation is named
by its uid ("panda"); robot k of several is "<uid>-agent-<k>" in the env state and the
observation's "agent" entry holds one {"qpos", "qvel"} per robot keyed "<uid>-<k>".

Observations and state (ManiSkill 3.0.1's layout)
-------------------------------------------------
* state_dict: {"agent": {"qpos", "qvel"}, "extra": the task's `_extra_obs`}; state: the same
  flattened in that order, (N, D) float32 (bools as 0/1); none: {}.
* camera modes: agent and extra (no object state: tasks check `obs_mode.include_state`) plus
  "sensor_param", "sensor_data" and, for pointcloud, "pointcloud" (layout in
  envs/sensors/suite.py).
* get_state_dict(): {"actors": {name: (N, 13)}, "articulations": {name: (N, 13 + 2 dof)}} as
  ManiSkill's sim state, then groups of ours that ManiSkill's set_state_dict ignores:
  "drive_targets" ({articulation: (N, dof)}) and, for tasks with `task_state`, "task".
  get_state() flattens it in that order.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import sapien
import torch

from envs.controllers import Controller, MultiController, make_controller
from envs.core.agent import Agent
from envs.core.build import SELF_COLLISION_BIT
from envs.core.pose import euler_xyz_to_quat
from envs.core.world import BatchedWorld
from envs.modes import ControlMode, ObsMode, RenderMode, SimBackend, parse_mode
from envs.robots import get_robot, robot_family
from envs.sensors.config import CameraConfig, default_base_camera, default_render_camera, resolve_sensor_configs

BUILD_SEED = 2022  # ManiSkill's seed for the episode an env is built with (env k: 2022 + k)


class BatchRNG:
    """Per env, the two random streams ManiSkill 3.0.1 gives its one-env episode seeded s: torch's
    CPU generator seeded s (ManiSkill runs `_initialize_episode` under `torch.manual_seed(s)`:
    `torch.rand`, `torch.normal`, its `randomization.uniform` and `random_quaternions`) and numpy's
    legacy `RandomState(s)` (its episode RNG: the table scene's joint noise).

    Every method draws per env with batch size 1, each env from its own streams, so env k seeded
    s + k draws exactly the numbers ManiSkill's one env draws after `reset(seed=s + k)`, whatever
    the batch; a task calls them in ManiSkill's order. `idx` holds the envs being initialised; a
    method's `where` (a bool mask over them) draws for some of those envs only."""

    def __init__(self, num_envs: int):
        self.torch = [torch.Generator() for _ in range(num_envs)]
        self.numpy = [np.random.RandomState() for _ in range(num_envs)]
        self.idx: list[int] = []

    def seed(self, env_idx: Sequence[int], seeds: Sequence[int]) -> None:
        for i, s in zip(env_idx, seeds):
            # each as new: reseeding also drops a cached normal sample (and costs 3 us, where a
            # new RandomState costs 190 us)
            self.torch[i].manual_seed(int(s))
            self.numpy[i].seed(int(s))

    def _envs(self, where: torch.Tensor | None) -> list[int]:
        return self.idx if where is None else [i for i, w in zip(self.idx, where.tolist()) if w]

    def rand(self, size: tuple[int, ...], where: torch.Tensor | None = None) -> torch.Tensor:
        """(n, *size) float32 in [0, 1): `torch.rand((1, *size))` per env."""
        return torch.cat([torch.rand((1, *size), generator=self.torch[i]) for i in self._envs(where)])

    def uniform(self, low, high, size: tuple[int, ...] = (), where: torch.Tensor | None = None) -> torch.Tensor:
        """(n, *size) float32: rand * (high - low) + low, as ManiSkill's `randomization.uniform`
        computes it (numbers as Python floats, sequences as float32 tensors along the last axis)."""
        if not isinstance(low, (int, float)):
            low = torch.as_tensor(low, dtype=torch.float32)
        if not isinstance(high, (int, float)):
            high = torch.as_tensor(high, dtype=torch.float32)
        return self.rand(size, where) * (high - low) + low

    def euler_quat(self, low: float, high: float, lock: str = "xy") -> torch.Tensor:
        """(n, 4) quaternions (w >= 0) of intrinsic X-Y-Z Euler angles drawn uniform in
        [low, high), the axes named in `lock` then set to 0; each env draws all three angles,
        as ManiSkill's `random_quaternions(1, lock_x, lock_y, lock_z, bounds)` does."""
        angles = self.rand((3,)) * (high - low) + low  # (n, 3)
        for k, axis in enumerate("xyz"):
            if axis in lock:
                angles[:, k] = 0.0
        q = euler_xyz_to_quat(angles.double())
        return torch.where(q[:, :1] < 0, -q, q).float()

    def normal(self, std: float, size: tuple[int, ...]) -> torch.Tensor:
        """(n, *size) float32: `torch.normal(0, std, (1, *size))` per env, from the torch stream."""
        return torch.cat([torch.normal(0.0, std, (1, *size), generator=self.torch[i]) for i in self.idx])

    def numpy_normal(self, std: float, size: tuple[int, ...]) -> torch.Tensor:
        """(n, *size) float64: `RandomState.normal(0, std, (1, *size))` per env, from the numpy
        stream (ManiSkill's episode RNG)."""
        return torch.from_numpy(np.concatenate([self.numpy[i].normal(0.0, std, (1, *size)) for i in self.idx]))


def check_action(action, shape: tuple[int, ...], mode: ControlMode) -> torch.Tensor:
    """`action` as a float32 tensor, or a ValueError when its shape is not `shape` or a value is
    not finite (in-process and over workers alike)."""
    a = torch.as_tensor(action, dtype=torch.float32)
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"action has shape {tuple(a.shape)}; {mode.value} expects {tuple(shape)}")
    if not torch.isfinite(a).all():
        raise ValueError("action contains NaN or infinite values")
    return a


def _flatten(tree: dict[str, Any]) -> list[torch.Tensor]:
    out = []
    for key in tree:
        v = tree[key]
        out.extend(_flatten(v) if isinstance(v, dict) else [v.reshape(v.shape[0], -1).float()])
    return out


def _box(v: torch.Tensor) -> gym.spaces.Box:
    if v.dtype.is_floating_point:
        return gym.spaces.Box(-np.inf, np.inf, tuple(v.shape), np.float32)
    if v.dtype == torch.bool:  # flags such as is_grasped
        return gym.spaces.Box(0, 1, tuple(v.shape), np.bool_)
    dtype = np.dtype(str(v.dtype).removeprefix("torch."))  # images: uint8, int16
    return gym.spaces.Box(np.iinfo(dtype).min, np.iinfo(dtype).max, tuple(v.shape), dtype)


def _space(tree: dict[str, Any]) -> gym.spaces.Dict:
    return gym.spaces.Dict({k: _space(v) if isinstance(v, dict) else _box(v) for k, v in tree.items()})


class BaseEnv(gym.Env):
    metadata = {"render_modes": [m.value for m in RenderMode]}
    env_id: str = ""
    default_max_episode_steps: int = 100
    supported_robots: tuple[str, ...] = ("panda",)  # uids any of the task's robots may be
    num_robots: int = 1
    supported_control_modes: tuple[ControlMode, ...] = tuple(ControlMode)
    task_state: tuple[str, ...] = ()
    default_physics: dict[str, Any] = {}  # envs.core.world.PhysicsConfig fields of the task's own sim config

    @classmethod
    def seeded_scene_kwargs(cls, seeds: Sequence[int]) -> dict[str, Any]:
        """gym.make kwargs that build env k's scene as ManiSkill's one-env instance builds it at
        `reset(seed=seeds[k])`, for a task whose scene (not only its poses) depends on the seed;
        empty for every other task."""
        return {}

    def __new__(cls, *args: Any, num_workers: int = 1, **kwargs: Any):
        """`num_workers` other than 1 builds an `envs.parallel.ParallelEnv` instead: the same batched
        API with the envs spread over that many worker processes (each runs this class in-process)."""
        if num_workers == 1:
            return super().__new__(cls)
        from envs.parallel import ParallelEnv  # imported here: envs.parallel builds on this module

        return ParallelEnv(cls, num_workers, *args, **kwargs)

    def __init__(
        self,
        num_envs: int = 1,
        obs_mode: str = "state",
        control_mode: str = "pd_joint_delta_pos",
        robot_uids: str | Sequence[str] = "panda",
        sim_freq: int = 100,
        control_freq: int = 20,
        max_episode_steps: int | None = None,
        sim_backend: str = "physx_cpu",
        render_mode: str | None = None,
        num_workers: int = 1,
        first_env_index: int = 0,
        sensor_configs: dict[str, Any] | None = None,
        physics: dict[str, Any] | None = None,
    ):
        """num_workers: handled by `__new__` (1 here). first_env_index: the global index of env 0, set
        by a parallel env's workers so that every env sits at its own grid place in the scene.
        physics: `envs.core.world.PhysicsConfig` fields to change (PhysX solver, contacts, materials,
        isolation); the defaults are ManiSkill's."""
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if sim_freq % control_freq != 0:
            raise ValueError(f"sim_freq ({sim_freq}) must be a multiple of control_freq ({control_freq})")
        self.num_envs = int(num_envs)
        self.obs_mode = parse_mode(ObsMode, obs_mode, "obs mode")
        if render_mode is not None:
            mode = parse_mode(RenderMode, render_mode, "render mode")
            if mode is RenderMode.HUMAN:
                from envs.sensors.viewer import require_display

                require_display()
            render_mode = mode.value
        self.control_mode = parse_mode(ControlMode, control_mode, "control mode")
        self.sim_backend = parse_mode(SimBackend, sim_backend, "sim backend")
        if self.control_mode not in self.supported_control_modes:
            allowed = ", ".join(m.value for m in self.supported_control_modes)
            raise ValueError(f"{self.env_id} does not support control mode {self.control_mode.value!r}; allowed: {allowed}")
        self.robot_uids = self._parse_robot_uids(robot_uids)
        self.sim_freq, self.control_freq = int(sim_freq), int(control_freq)
        self.sim_steps_per_control = self.sim_freq // self.control_freq
        self.max_episode_steps = int(max_episode_steps or self.default_max_episode_steps)
        self.render_mode = render_mode
        self._viewer = None

        if self.default_physics and (physics is None or isinstance(physics, dict)):
            physics = {**self.default_physics, **(physics or {})}
        self.world = BatchedWorld(
            self.num_envs,
            self.sim_freq,
            visual=self.obs_mode.visual or render_mode is not None,
            first_index=int(first_env_index),
            physics=physics,
        )
        self._load_scene()
        self.sensor_settings = resolve_sensor_configs(
            self._default_sensor_configs(), self._default_render_camera_configs(), sensor_configs
        )
        self.sensors = None
        if self.world.visual:
            from envs.sensors.suite import Sensors  # render code only for envs that render

            # SAPIEN's viewer adds its own camera to the scene, which a GPU render group forbids
            self.sensors = Sensors(self.world, self.sensor_settings, gpu_batch=False if render_mode == RenderMode.HUMAN.value else None)
        self.controller: Controller = self._make_controller()
        n = self.num_envs
        self.rng = BatchRNG(n)
        # the episode an env is built with: ManiSkill's, seeded 2022 + the env's global index
        self.rng.seed(range(n), [BUILD_SEED + int(first_env_index) + k for k in range(n)])
        self.elapsed_steps = torch.zeros(self.num_envs, dtype=torch.int32)
        self.episode_seeds = torch.full((self.num_envs,), -1, dtype=torch.int64)
        self._seed_source = np.random.default_rng()

        self.single_action_space = gym.spaces.Box(self.controller.low, self.controller.high, dtype=np.float32)
        self.action_space = gym.spaces.Box(
            np.tile(self.controller.low, (n, 1)), np.tile(self.controller.high, (n, 1)), dtype=np.float32
        )
        self._initialize(torch.arange(n))
        obs = self.get_obs(self.evaluate())
        if isinstance(obs, dict):
            self.observation_space = _space(obs)
        else:
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, tuple(obs.shape), np.float32)

    # ---- hooks a task fills in --------------------------------------------------------------
    def _load_scene(self) -> None:
        """Build every env's objects with `self.world` and the robot with `self._load_agent`."""
        raise NotImplementedError

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        """Place objects (and the robot) for the envs in env_idx, drawing from rng in the order
        ManiSkill's task draws."""
        raise NotImplementedError

    def evaluate(self) -> dict[str, torch.Tensor]:
        """(N,) bool tensors "success" and "fail", plus anything the reward wants."""
        raise NotImplementedError

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {}

    def _after_control_step(self) -> None:
        """Runs after each control step's physics, before the step is counted and evaluated."""

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """(N,) float reward in [0, 1]; 1 on success."""
        return info["success"].float()

    def _make_controller(self) -> Controller:
        """The controller of `self.control_mode`. A task actuating something other than a robot
        agent (e.g. a cart-pole) returns its own object with `low`, `high`, `action_dim` and
        `apply(action)`, and lists the modes it accepts in `supported_control_modes`."""
        controllers = [make_controller(self.control_mode, agent) for agent in self.agents]
        return controllers[0] if len(controllers) == 1 else MultiController(controllers)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        """Observation cameras: a base camera looking at the env origin, plus the robot's own
        (an actuated object that is not a robot, with no `spec`, carries none; nor do the robots of
        a multi-robot task, whose link names repeat)."""
        spec = getattr(self.agent, "spec", None)
        if spec is None or self.num_robots > 1:  # several robots: their link names would collide
            return [default_base_camera()]
        return [default_base_camera(), *spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        """Human-view cameras for render(); the first is the one rendered."""
        return [default_render_camera()]

    # ---- helpers for tasks ----------------------------------------------------------------
    def _parse_robot_uids(self, robot_uids: str | Sequence[str]) -> str | tuple[str, ...]:
        """One uid for single-robot tasks, else a tuple of num_robots uids; a ValueError otherwise."""
        uids = (robot_uids,) if isinstance(robot_uids, str) else tuple(robot_uids)
        if len(uids) != self.num_robots:
            raise ValueError(f"{self.env_id} takes {self.num_robots} robot(s); got robot_uids={robot_uids!r}")
        for uid in uids:
            if uid not in self.supported_robots and robot_family(uid) not in self.supported_robots:
                raise ValueError(
                    f"{self.env_id} does not support robot {uid!r}; allowed: {', '.join(self.supported_robots)}"
                )
        return uids[0] if self.num_robots == 1 else uids

    def _load_agent(self, root_pose: sapien.Pose) -> Agent:
        """The robot of a single-robot task, named by its uid as ManiSkill names it."""
        self.agent = Agent(self.world, get_robot(self.robot_uids), root_pose, self.robot_uids)
        self.agents = [self.agent]
        return self.agent

    def _load_agents(self, root_poses: Sequence[sapien.Pose]) -> list[Agent]:
        """The robots of a multi-robot task, one per root pose in robot_uids order, named
        "<uid>-agent-<k>" (observed as "<uid>-<k>") as ManiSkill's multi-agent names them; they
        collide with each other (each skips only its own link pairs)."""
        if len(root_poses) != len(self.robot_uids):
            raise ValueError(f"{len(root_poses)} root poses for robot_uids={self.robot_uids!r}")
        self.agents = [
            Agent(self.world, get_robot(uid), pose, f"{uid}-agent-{k}", ignore_bit=SELF_COLLISION_BIT - k, obs_key=f"{uid}-{k}")
            for k, (uid, pose) in enumerate(zip(self.robot_uids, root_poses))
        ]
        self.agent = self.agents[0]
        return self.agents

    # ---- gymnasium API ----------------------------------------------------------------------
    def _initialize(self, env_idx: torch.Tensor) -> None:
        self.rng.idx = env_idx.tolist()
        self._initialize_episode(env_idx, self.rng)
        self.controller.reset(env_idx)  # controllers take their targets from the new state
        self.elapsed_steps[env_idx] = 0

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        options = options or {}
        env_idx = options.get("env_idx")
        env_idx = torch.arange(self.num_envs) if env_idx is None else torch.as_tensor(env_idx, dtype=torch.long).flatten()
        if seed is not None:
            seeds = [int(seed) + k for k in range(len(env_idx))] if np.isscalar(seed) else [int(s) for s in seed]
            if len(seeds) != len(env_idx):
                raise ValueError(f"reset got {len(seeds)} seeds for {len(env_idx)} envs")
        else:
            seeds = [int(s) for s in self._seed_source.integers(0, 2**31 - 1, len(env_idx))]
        self.rng.seed(env_idx.tolist(), seeds)
        self.episode_seeds[env_idx] = torch.tensor(seeds, dtype=torch.int64)
        self.world.resume(env_idx.tolist())
        self._initialize(env_idx)
        info = self.evaluate()
        info["elapsed_steps"] = self.elapsed_steps.clone()
        return self.get_obs(info), info

    def step(self, action):
        self.controller.apply(check_action(action, (self.num_envs, self.controller.action_dim), self.control_mode))
        for _ in range(self.sim_steps_per_control):
            self.world.step()
        self._after_control_step()
        self.elapsed_steps += 1
        info = self.evaluate()
        info["elapsed_steps"] = self.elapsed_steps.clone()
        reward = self.compute_dense_reward(info)
        terminated = info["success"] | info["fail"]
        truncated = self.elapsed_steps >= self.max_episode_steps
        return self.get_obs(info), reward, terminated, truncated, info

    # ---- observations -------------------------------------------------------------------------
    def get_obs_dict(self, info: dict[str, torch.Tensor]) -> dict[str, Any]:
        """ManiSkill's state_dict observation: the robots' qpos and qvel, then the task's extra."""
        # an actuated object that is not a robot agent (a cart-pole) is observed under its name
        robots = {getattr(a, "obs_key", a.name): {"qpos": a.qpos, "qvel": a.qvel} for a in self.agents}
        return {
            "agent": robots if self.num_robots > 1 else next(iter(robots.values())),
            "extra": self._extra_obs(info),
        }

    def get_obs(self, info: dict[str, torch.Tensor]):
        """The observation of `self.obs_mode` (see the module docstring)."""
        if self.obs_mode is ObsMode.NONE:
            return {}
        tree = self.get_obs_dict(info)
        if self.obs_mode.visual:
            return {**tree, **self.sensors.observe(self.obs_mode)}
        if self.obs_mode is ObsMode.STATE_DICT:
            return tree
        return torch.cat(_flatten(tree), 1)

    @property
    def segmentation_ids(self) -> dict[str, int]:
        """Entity name -> its id in segmentation images (0: nothing); the same in every env."""
        return self.sensors.segmentation_ids if self.sensors is not None else {}

    def render(self):
        """rgb_array: (N, H, W, 3) uint8 from the human-view camera. human: shows the envs in a
        window (render_mode chosen at construction)."""
        if self.render_mode is None:
            raise ValueError("render() needs render_mode='rgb_array' or 'human' at construction")
        if self.render_mode == RenderMode.HUMAN.value:
            if self._viewer is None:
                from envs.sensors.viewer import HumanViewer

                self._viewer = HumanViewer(self.world)
            self.sensors.show_hidden(True)  # hidden from observation cameras only
            self._viewer.show()
            return None
        return self.sensors.render()

    # ---- full simulator state ---------------------------------------------------------------
    def get_state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """ManiSkill's env state (actors, articulations) and ours after it (see the module docstring)."""
        state = self.world.state_dict()
        if self.task_state:
            state["task"] = {k: getattr(self, k).clone().float().reshape(self.num_envs, -1) for k in self.task_state}
        return state

    def set_state_dict(self, state: dict[str, dict[str, torch.Tensor]], env_idx: torch.Tensor | None = None) -> None:
        """Restore a state of `get_state_dict`, or a ManiSkill state of the same task (drive
        targets then at qpos)."""
        self.world.set_state_dict(state, env_idx)
        idx = slice(None) if env_idx is None else torch.as_tensor(env_idx, dtype=torch.long)
        for k in self.task_state:
            if k in state.get("task", {}):
                dest = getattr(self, k)
                dest[idx] = torch.as_tensor(state["task"][k], dtype=torch.float32).reshape(dest[idx].shape).to(dest.dtype)
        for agent in self.agents:
            agent.sync_targets()
        self.controller.sync(torch.arange(self.num_envs) if env_idx is None else idx)

    def get_state(self) -> torch.Tensor:
        """(N, D): `get_state_dict` flattened: actors, articulations (ManiSkill's flat state),
        then drive targets and the task's own state."""
        return torch.cat(_flatten(self.get_state_dict()), 1)

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """state: (len(env_idx), D) as returned by get_state (rows for the given envs), or
        ManiSkill's flat state of the same task (its actors and articulations alone)."""
        template = self.get_state_dict()
        state = torch.as_tensor(state, dtype=torch.float32)
        total = sum(t.shape[1] for t in _flatten(template))
        maniskill = {g: template[g] for g in ("actors", "articulations")}
        if state.ndim == 2 and state.shape[1] == sum(t.shape[1] for t in _flatten(maniskill)):
            template = maniskill
        elif state.ndim != 2 or state.shape[1] != total:
            raise ValueError(f"state has shape {tuple(state.shape)}; expected (n, {total})")
        tree, col = {}, 0
        for group, entries in template.items():
            tree[group] = {}
            for name, value in entries.items():
                width = value.shape[1]
                tree[group][name] = state[:, col : col + width]
                col += width
        self.set_state_dict(tree, env_idx)

    def close(self) -> None:
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
        self.sensors = None
        self.world = None
