"""mplib 0.2.1 behind one call: plan the arm from a joint configuration to a TCP pose.

Frames: goals and obstacles are given in the robot's root frame (the planner's world). Screw
motion is tried first (straight-line, fast, predictable); RRTConnect is the fallback. The result
is a time-parameterised joint trajectory sampled at the control period, one row per control
step, ready to execute as pd_joint_pos targets.
"""

from __future__ import annotations

import importlib
import sys
import types
import zlib
from dataclasses import dataclass

import numpy as np

from envs.imports import collector_paused
from envs.robots import get_robot


VEL_LIMIT = 2.0  # rad/s, every arm joint
ACC_LIMIT = 5.0  # rad/s^2


@dataclass(frozen=True)
class Box:
    """An obstacle: pose (7,) = xyz + wxyz quaternion in the root frame, half extents (3,)."""

    name: str
    pose: tuple[float, ...]
    half_size: tuple[float, float, float]


@dataclass(frozen=True)
class PlanRequest:
    robot_uid: str
    qpos: tuple[float, ...]  # full robot qpos
    goal: tuple[float, ...]  # (7,) TCP pose in the root frame
    # further (7,) goals tried in order when `goal` cannot be reached; the plan ends at the first
    # that can (a later stage reads where the TCP went, not which goal it was)
    fallbacks: tuple[tuple[float, ...], ...] = ()
    obstacles: tuple[Box, ...] = ()
    attached: Box | None = None  # a held object, pose relative to the TCP
    screw_only: bool = False
    control_dt: float = 0.05
    speed: float = 1.0  # scales the joint velocity limit (and the acceleration limit by its square)
    turn_limit: float | None = None  # rad/s: the TCP turns no faster (the plan is slowed to match); None: any


class _OnFirstUse(types.ModuleType):
    """Stands in sys.modules for a module not yet imported, and imports it (taking its contents)
    at the first use of one of its attributes; a stand-in package hands out its stand-in
    submodules as they are (`import package.sub as x` reads `sub` off the package)."""

    def __getattr__(self, attr: str):
        sub = sys.modules.get(f"{self.__name__}.{attr}")
        if sub is not None:
            return sub
        return getattr(self._load(), attr)

    def _load(self) -> types.ModuleType:
        # every stand-in of the package goes first, so that the package imports its real modules
        family = self.__name__.partition(".")[0]
        for name in [n for n, m in sys.modules.items() if isinstance(m, _OnFirstUse) and n.partition(".")[0] == family]:
            del sys.modules[name]
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return real


# what mplib imports and a straight plan never uses: toppra, the time parametrisation of RRT
# paths (with the SciPy modules it takes: 0.3 s of CPU), and the plotting that toppra imports
_DEFERRED = ("toppra", "toppra.algorithm", "toppra.constraint", "matplotlib", "matplotlib.pyplot")


def import_mplib():
    """mplib, without the parts of its import that a straight plan never uses: toppra (which mplib
    needs to time an RRT path) and matplotlib (which toppra imports for plots no planner draws)
    are imported at their first use instead, in the planner process that falls back to RRT.
    The import runs with the garbage collector paused (envs.imports)."""
    for name in _DEFERRED:
        if name not in sys.modules:
            sys.modules[name] = _OnFirstUse(name)
    with collector_paused():
        import mplib

    return mplib


class ArmPlanner:
    """One mplib planner per robot; obstacles are replaced on every call."""

    def __init__(self, robot_uid: str):
        mplib = import_mplib()  # imported here: planning runs in its own processes
        self._mplib = mplib
        spec = get_robot(robot_uid)
        self.spec = spec
        self.planner = mplib.Planner(
            urdf=str(spec.urdf),
            srdf=str(spec.srdf),
            move_group=spec.tcp_link,
            joint_vel_limits=np.full(len(spec.arm_joints), VEL_LIMIT),
            joint_acc_limits=np.full(len(spec.arm_joints), ACC_LIMIT),
        )
        self._objects: list[str] = []

    def _set_obstacles(self, boxes: tuple[Box, ...], attached: Box | None) -> None:
        from mplib.collision_detection import fcl

        world = self.planner.planning_world
        for name in self._objects:
            world.remove_object(name)
        self._objects = []
        for b in boxes:
            shape = fcl.CollisionObject(fcl.Box(2 * np.asarray(b.half_size)), self._mplib.Pose())
            world.add_object(fcl.FCLObject(b.name, self._mplib.Pose(b.pose[:3], b.pose[3:]), [shape], [self._mplib.Pose()]))
            self._objects.append(b.name)
        for name in world.get_object_names():
            if world.is_object_attached(name):
                world.detach_object(name, also_remove=True)
        if attached is not None:
            self.planner.update_attached_box(2 * np.asarray(attached.half_size), self._mplib.Pose(attached.pose[:3], attached.pose[3:]))

    def _plan_straight(self, goal, qpos: np.ndarray, dt: float, speed: float) -> dict:
        """The TCP along the straight line to goal, turning at a constant rate (slerp): IK at
        waypoints 1 cm / 3 degrees apart, each seeded with the previous one and solved with whole
        Gauss-Newton steps (a waypoint is this close to its seed, so a few iterations reach the
        tolerance where mplib's default tenth-steps take dozens; planning's CPU halves), checked
        for collisions and joint jumps. (mplib's plan_screw integrates a spatial twist with a
        Jacobian taken at the link, so large turns sweep the TCP far off the line.)"""
        pl, pin = self.planner, self.planner.pinocchio_model
        ee = pl.link_name_2_idx[pl.move_group]
        group = np.asarray(pl.move_group_joint_indices)
        mask = [i not in group for i in range(len(qpos))]
        pin.compute_forward_kinematics(qpos)
        start = pin.get_link_pose(ee)
        p0, p1 = np.asarray(start.p), np.asarray(goal.p)
        q0, q1 = np.asarray(start.q), np.asarray(goal.q)
        if np.dot(q0, q1) < 0:
            q1 = -q1
        angle = 2 * np.arccos(min(1.0, abs(float(np.dot(q0, q1)))))
        n = max(2, int(np.ceil(max(np.linalg.norm(p1 - p0) / 0.01, angle / np.radians(3)))))
        q, arm = qpos.copy(), qpos[group]
        path = [arm]
        lower, upper = pl.joint_limits[:, 0] - 1e-3, pl.joint_limits[:, 1] + 1e-3
        line, half = p1 - p0, angle / 2
        sin_half = np.sin(half)
        for t in np.linspace(0, 1, n + 1)[1:]:  # per waypoint only what changes: most of a plan is mplib's IK
            w = q0 if angle < 1e-6 else (np.sin((1 - t) * half) * q0 + np.sin(t * half) * q1) / sin_half  # slerp
            q_new, ok, _ = pin.compute_IK_CLIK(ee, self._mplib.Pose(p0 + t * line, w), q, mask, eps=1e-5, max_iter=200, dt=1.0)
            if not ok or (q_new < lower).any() or (q_new > upper).any():
                return {"status": "straight plan: no IK on the line"}
            arm_new = q_new[group]
            if np.abs(arm_new - arm).max() > 0.3:
                return {"status": "straight plan: joint jump"}
            pl.planning_world.set_qpos_all(arm_new)
            if pl.planning_world.is_state_colliding():
                hits = {f"{c.link_name1}/{c.link_name2}" for c in pl.planning_world.check_collision()}
                return {"status": f"straight plan: collision {', '.join(sorted(hits))} at {t:.0%}"}
            q, arm = q_new, arm_new
            path.append(arm)
        return {"status": "Success", "position": _trapezoid(np.vstack(path), VEL_LIMIT * speed, ACC_LIMIT * speed**2, dt)}

    def plan(self, req: PlanRequest) -> tuple[np.ndarray | None, str]:
        """(T, n_arm) joint targets to the first goal that can be reached, or None and why the
        first could not. The plan depends on the request alone: mplib's random sampling (IK
        starts, RRTConnect) is seeded from the request's contents, so the same seeds give the same
        episodes whichever process planned them, and in whatever order."""
        self._mplib.set_global_seed(zlib.crc32(repr(req).encode()))
        self._set_obstacles(req.obstacles, req.attached)
        first = None
        for goal in (req.goal, *req.fallbacks):
            traj, why = self._plan_to(req, self._mplib.Pose(goal[:3], goal[3:]))
            if traj is not None:
                return traj, why
            first = first or why
        return None, first

    def _plan_to(self, req: PlanRequest, goal) -> tuple[np.ndarray | None, str]:
        # a closed gripper's targets lie past its joint limits (to keep squeezing); mplib's screw
        # planner rejects a start outside the limits, so plan from the nearest admissible one
        limits = self.planner.joint_limits
        qpos = np.clip(np.asarray(req.qpos, dtype=np.float64), limits[:, 0], limits[:, 1])
        result = self._plan_straight(goal, qpos, req.control_dt, req.speed)
        if result["status"] != "Success" and not req.screw_only:
            # RRTConnect to the collision-free IK solution nearest the start (mplib's plan_pose
            # takes any, and a far one costs hundreds of steps of wrist unwinding)
            status, q_goal = self.planner.IK(goal, qpos, n_init_qpos=40, return_closest=True)
            result = {"status": status}
            if status == "Success":
                n_arm = len(self.spec.arm_joints)
                self.planner.joint_vel_limits = np.full(n_arm, VEL_LIMIT * req.speed)
                self.planner.joint_acc_limits = np.full(n_arm, ACC_LIMIT * req.speed**2)
                result = self.planner.plan_qpos([q_goal], qpos, time_step=req.control_dt, planning_time=1.0)
        if result["status"] != "Success":
            return None, str(result["status"])
        traj = np.asarray(result["position"], dtype=np.float32)
        if req.turn_limit is not None:
            over = self._max_turn(qpos, traj) / (req.turn_limit * req.control_dt)
            if over > 1:
                traj = _stretch(qpos[self.planner.move_group_joint_indices], traj, over)
        return traj, "Success"

    def _max_turn(self, qpos: np.ndarray, traj: np.ndarray) -> float:
        """The largest turn of the TCP (rad) from one row of traj to the next, from qpos on."""
        pl, pin = self.planner, self.planner.pinocchio_model
        ee, group = pl.link_name_2_idx[pl.move_group], pl.move_group_joint_indices
        q, quats = qpos.copy(), []
        for row in (qpos[group], *traj):
            q[group] = row
            pin.compute_forward_kinematics(q)
            quats.append(np.asarray(pin.get_link_pose(ee).q))
        dots = np.abs(np.sum(np.asarray(quats[1:]) * np.asarray(quats[:-1]), axis=1))
        return float(2 * np.arccos(np.clip(dots, 0.0, 1.0)).max())


def _stretch(start: np.ndarray, traj: np.ndarray, factor: float) -> np.ndarray:
    """traj (T, D), which leaves `start` (D,), run `factor` times slower: the same path, resampled
    at the same period (velocities divided by factor, accelerations by its square)."""
    path = np.vstack((start[None], traj))
    t = np.arange(1, int(np.ceil(len(traj) * factor)) + 1) / factor
    return np.stack([np.interp(np.minimum(t, len(traj)), np.arange(len(path)), path[:, j]) for j in range(path.shape[1])],
                    1).astype(np.float32)


def _trapezoid(path: np.ndarray, vel: float, acc: float, dt: float) -> np.ndarray:
    """Samples (T, D) at period dt of a piecewise-linear joint path (n, D) followed with a
    trapezoidal speed profile in the max-norm over joints: no joint exceeds vel or acc. Much
    cheaper than TOPP-RA, and exact enough for the short, dense paths of straight motions."""
    seg = np.abs(np.diff(path, axis=0)).max(1)
    s = np.concatenate(([0.0], np.cumsum(seg)))  # arc length in the max-norm
    total = s[-1]
    if total < 1e-9:
        return path[-1:].copy()
    t_acc = vel / acc
    if acc * t_acc**2 >= total:  # never reaches full speed: a triangle
        t_acc = np.sqrt(total / acc)
        vel = acc * t_acc
    duration = 2 * t_acc + (total - acc * t_acc**2) / vel
    t = np.append(np.arange(1, int(np.ceil(duration / dt))) * dt, duration)
    rise = 0.5 * acc * np.minimum(t, t_acc) ** 2
    cruise = vel * np.clip(t - t_acc, 0, duration - 2 * t_acc)
    fall_t = np.clip(t - (duration - t_acc), 0, t_acc)
    fall = vel * fall_t - 0.5 * acc * fall_t**2
    arc = np.minimum(rise + cruise + fall, total)
    return np.stack([np.interp(arc, s, path[:, j]) for j in range(path.shape[1])], 1).astype(np.float32)
