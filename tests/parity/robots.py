"""The Panda robots beside ManiSkill 3.0.1's agent files and URDFs."""

from __future__ import annotations

import math
from functools import cache

from envs.robots import get_robot
from tests.parity import Row, Table

_AGENT = "agents/robots/panda/panda.py"
_WRIST = "agents/robots/panda/panda_wristcam.py"
_URDF = "assets/robots/panda/panda_v2.urdf"


@cache
def _joint(name: str):
    return next(j for j in get_robot("panda").model.joints if j.name == name)


@cache
def _camera():
    (cam,) = get_robot("panda_wristcam").cameras
    return cam


def _rows() -> list[Row]:
    p = lambda: get_robot("panda")  # noqa: E731
    rows = [
        Row("panda: rest keyframe", (0.0, math.pi / 8, 0.0, -math.pi * 5 / 8, 0.0, math.pi * 3 / 4, math.pi / 4, 0.04, 0.04),
            lambda: p().rest_qpos, _AGENT),
        Row("panda: arm joints", tuple(f"panda_joint{i}" for i in range(1, 8)), lambda: p().arm_joints, _AGENT),
        Row("panda: gripper joints", ("panda_finger_joint1", "panda_finger_joint2"), lambda: p().gripper_joints, _AGENT),
        Row("panda: TCP link", "panda_hand_tcp", lambda: p().tcp_link, _AGENT),
        Row("panda: arm stiffness, damping, force limit", (1e3, 1e2, 100), lambda: (p().arm_drive.stiffness, p().arm_drive.damping, p().arm_drive.force_limit), _AGENT),
        Row("panda: gripper stiffness, damping, force limit", (1e3, 1e2, 100),
            lambda: (p().gripper_drive.stiffness, p().gripper_drive.damping, p().gripper_drive.force_limit), _AGENT),
        Row("panda: gripper target range (closed, open)", (-0.01, 0.04), lambda: p().gripper_limits, _AGENT),
        Row("panda: cameras", (), lambda: tuple(c.uid for c in p().cameras), _AGENT),
        Row("panda_wristcam: camera uid, mount link", ("hand_camera", "camera_link"), lambda: (_camera().uid, _camera().mount), _WRIST),
        Row("panda_wristcam: camera width, height, fov, near, far", (128, 128, math.pi / 2, 0.01, 100),
            lambda: (_camera().width, _camera().height, _camera().fov, _camera().near, _camera().far), _WRIST),
        Row("panda_wristcam: camera pose in camera_link", (0, 0, 0, 1, 0, 0, 0), lambda: _camera().pose, _WRIST),
        Row("panda_wristcam: camera_link in panda_hand (realsense_joint xyz, rpy; camera_link_joint xyz)",
            ((0.035, 0, 0.036), (0, -1.5707, 3.1415), (0, 0.02, 0.0115)),
            lambda: _wrist_mount(), "assets/robots/panda/panda_v3.urdf"),
    ]
    limits = {1: (-2.8973, 2.8973), 2: (-1.7628, 1.7628), 3: (-2.8973, 2.8973), 4: (-3.0718, -0.0698),
              5: (-2.8973, 2.8973), 6: (-0.0175, 3.7525), 7: (-2.8973, 2.8973)}
    origins = {1: (0, 0, 0.333), 2: (0, 0, 0), 3: (0, -0.316, 0), 4: (0.0825, 0, 0), 5: (-0.0825, 0.384, 0), 6: (0, 0, 0), 7: (0.088, 0, 0)}
    h = math.pi / 2
    rpys = {1: (0, 0, 0), 2: (-h, 0, 0), 3: (h, 0, 0), 4: (h, 0, 0), 5: (-h, 0, 0), 6: (h, 0, 0), 7: (h, 0, 0)}
    for i in range(1, 8):
        n = f"panda_joint{i}"
        rows.append(Row(f"{n}: limits", limits[i], lambda n=n: (_joint(n).lower, _joint(n).upper), _URDF))
        rows.append(Row(f"{n}: origin xyz, rpy, axis", (origins[i], rpys[i], (0, 0, 1)),
                        lambda n=n: (_joint(n).origin.xyz, _joint(n).origin.rpy, _joint(n).axis), _URDF, tol=1e-7))
    rows += [
        Row("panda_finger_joint1/2: origin z, axes, range", (0.0584, (0, 1, 0), (0, -1, 0), 0.0, 0.04),
            lambda: (_joint("panda_finger_joint1").origin.xyz[2], _joint("panda_finger_joint1").axis,
                     _joint("panda_finger_joint2").axis, _joint("panda_finger_joint1").lower, _joint("panda_finger_joint1").upper), _URDF),
        Row("panda_hand_tcp: offset from panda_hand", (0, 0, 0.1034), lambda: _joint("panda_hand_tcp_joint").origin.xyz, _URDF),
        Row("panda_hand: yaw from panda_link8", -math.pi / 4, lambda: _joint("panda_hand_joint").origin.rpy[2], _URDF, tol=1e-7),
        Row("link masses (link0..link7, hand, finger)", (0.629769, 4.970684, 0.646926, 3.228604, 3.587895, 1.225946, 1.666555, 0.735522, 0.73, 0.015),
            lambda: _masses(), _URDF),
        Row("panda_link1: COM, inertia (ixx ixy ixz iyy iyz izz)",
            ((0.003875, 0.002081, -0.04762), (0.70337, -0.000139, 0.006772, 0.70661, 0.019169, 0.009117)),
            lambda: _inertia("panda_link1"), _URDF, tol=1e-6),
        Row("panda_link3: COM, inertia (ixx ixy ixz iyy iyz izz)",
            ((0.027518, 0.039252, -0.066502), (0.037242, -0.004761, -0.011396, 0.036155, -0.012805, 0.01083)),
            lambda: _inertia("panda_link3"), _URDF, tol=1e-6),
        Row("fingers: static, dynamic friction, restitution, patch radius, min patch radius", (2.0, 2.0, 0.0, 0.1, 0.1),
            lambda: _finger_material(), _AGENT, tol=1e-6),
        Row("panda_leftfinger: collision boxes (half size, centre, roll); the right finger mirrored in y",
            (((0.011, 0.0044, 0.0019), (0.0, 0.0068, 0.0022), 0.0),
             ((0.011, 0.0075, 0.01), (0.0, 0.0185, 0.011), 0.0),
             ((0.00875, 0.0035, 0.01175), (0.0, 0.0159, 0.02835), math.pi / 6),
             ((0.00875, 0.0076, 0.00925), (0.0, 0.00758, 0.04525), 0.0)),
            lambda: _finger_boxes(), _URDF, tol=1e-6),
        Row("fingers: panda_finger_joint2 mimics panda_finger_joint1 (a fixed tendon, stiffness 1e5): drives asked "
            "0.04 apart after 0.2 s", "coupled", lambda: _finger_coupling(), f"{_URDF}, utils/building/articulation_builder.py"),
        Row("frames without an inertial (panda_link8, panda_hand_tcp, finger pads; panda_wristcam: camera_base_link): "
            "mass, largest principal inertia", (1e-6, 1e-6), lambda: _frame_masses(), _URDF, tol=1e-9),
        Row("panda_wristcam: finger pad links", (), lambda: tuple(link.name for link in get_robot("panda_wristcam").model.links
                                                                  if link.name.endswith("_pad")), "assets/robots/panda/panda_v3.urdf"),
        Row("collision geometry (links other than the fingers)", "meshes (franka_description)",
            lambda: "primitives (boxes, cylinders)", _URDF,
            deviation="we ship no ManiSkill assets: primitive collision shapes, kinematics held equal"),
    ]
    return rows


def _wrist_mount():
    m = get_robot("panda_wristcam").model
    a = next(j for j in m.joints if j.name == "realsense_joint")
    b = next(j for j in m.joints if j.name == "camera_link_joint")
    return (a.origin.xyz, a.origin.rpy, b.origin.xyz)


def _make(robot: str):
    import gymnasium as gym

    import envs  # noqa: F401  (registers)

    env = gym.make("PickCube-v1", num_envs=1, robot_uids=robot)
    env.reset(seed=0)
    return env.unwrapped


@cache
def _live(robot: str = "panda"):
    """A one-env PickCube of `robot`, kept for rows that read properties (never stepped)."""
    return _make(robot)


def _finger_coupling() -> str:
    """Read back from the simulator: the finger drives asked to 0 and 0.04, 20 PhysX steps; coupled
    fingers stay within 4 mm of each other (the tendon against the drives: 1.6 mm), uncoupled ones part."""
    env = _make("panda")  # stepped: an env of its own
    art = env.agent.group.links[0]["panda_hand"].articulation
    joints = {j.name: j for j in art.get_active_joints()}
    joints["panda_finger_joint1"].set_drive_target(0.0)
    joints["panda_finger_joint2"].set_drive_target(0.04)
    for _ in range(20):
        env.world.step()
    q = art.get_qpos()
    env.close()
    return "coupled" if abs(float(q[-2]) - float(q[-1])) < 0.004 else "independent"


def _frame_masses() -> tuple[float, float]:
    """Read back from the simulator: the largest mass and principal inertia of those frames."""
    names = {"panda": ("panda_link8", "panda_hand_tcp", "panda_leftfinger_pad", "panda_rightfinger_pad"),
             "panda_wristcam": ("panda_link8", "panda_hand_tcp", "camera_base_link")}
    out = [(link.mass, max(link.inertia)) for robot, frames in names.items()
           for link in (_live(robot).agent.group.links[0][f] for f in frames)]
    return tuple(max(v) for v in zip(*out))


def _finger_material():
    """Read back from the simulator: both fingers' collision shapes of the live robot."""
    links = _live().agent.group.links[0]
    out = set()
    for name in ("panda_leftfinger", "panda_rightfinger"):
        for shape in links[name].get_collision_shapes():
            m = shape.get_physical_material()
            out.add((m.static_friction, m.dynamic_friction, m.restitution, shape.patch_radius, shape.min_patch_radius))
    (only,) = out
    return only


def _finger_boxes():
    """Read back from the simulator: the left finger's collision boxes (half size, centre, roll
    about x), lowest first, each matched by the right finger's box mirrored in y (else an error)."""
    links = _live().agent.group.links[0]

    def boxes(name: str, sign: float) -> tuple:
        out = []
        for shape in links[name].get_collision_shapes():
            pose = shape.local_pose
            w, x = float(pose.q[0]), float(pose.q[1])
            if abs(float(pose.q[2])) > 1e-7 or abs(float(pose.q[3])) > 1e-7:
                raise AssertionError(f"{name}: a collision box turned about an axis other than x")
            out.append((tuple(round(float(h), 7) for h in shape.half_size),
                        tuple(round(float(c), 7) for c in (pose.p[0], sign * pose.p[1], pose.p[2])),
                        round(sign * 2 * math.atan2(x, w), 7)))
        return tuple(sorted(out, key=lambda b: b[1][2]))

    left = boxes("panda_leftfinger", 1.0)
    if left != boxes("panda_rightfinger", -1.0):
        raise AssertionError("the right finger's collision boxes are not the left's mirrored in y")
    return left


def _inertia(name: str):
    """COM and the full inertia tensor (from the simulator's principal moments and axes)."""
    import numpy as np

    link = _live().agent.group.links[0][name]
    cm = link.cmass_local_pose
    w, x, y, z = cm.q
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    t = r @ np.diag(link.inertia) @ r.T
    return (tuple(cm.p.tolist()), (t[0, 0], t[0, 1], t[0, 2], t[1, 1], t[1, 2], t[2, 2]))


def _masses():
    m = get_robot("panda").model
    names = [f"panda_link{i}" for i in range(8)] + ["panda_hand", "panda_leftfinger"]
    return tuple(next(link for link in m.links if link.name == n).inertial.mass for n in names)


TABLE = Table("Robots", _rows(), order=5, notes=(
    "`panda` (no camera) and `panda_wristcam` (the same arm with a hand camera); tasks that list `panda` "
    "accept `panda_wristcam` (robot family). `ur5e` is our own robot, not a ManiSkill uid."))
