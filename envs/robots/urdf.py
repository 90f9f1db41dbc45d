"""A small URDF reader for the robots SkillForge ships.

The project's robot files use primitive geometry only (box, sphere, cylinder), so this reader
returns plain dataclasses that three consumers share: the SAPIEN articulation builder, the
batched torch kinematics used by the end-effector controllers, and (through the file itself)
mplib. Reading the file ourselves keeps state-only scenes free of any render component.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Origin:
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def quat(self) -> tuple[float, float, float, float]:
        """(w, x, y, z) for URDF's fixed-axis roll, pitch, yaw."""
        r, p, y = (a / 2 for a in self.rpy)
        cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
        return (
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        )

    def matrix(self) -> np.ndarray:
        w, x, y, z = self.quat
        m = np.eye(4)
        m[:3, :3] = [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
        m[:3, 3] = self.xyz
        return m


@dataclass(frozen=True)
class Geometry:
    """A primitive: kind is "box" (size = full extents), "sphere" (radius,) or "cylinder"
    (radius, length) with its axis along the local z, as in URDF."""

    kind: str
    size: tuple[float, ...]
    origin: Origin
    rgba: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)


@dataclass(frozen=True)
class Inertial:
    """Mass and inertia at `origin`: principal moments `diagonal` about axes rotated by the
    quaternion `axes` (w, x, y, z) from the origin's frame (the URDF's full tensor, diagonalised)."""

    mass: float
    origin: Origin
    diagonal: tuple[float, float, float]
    axes: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


def _principal(ixx: float, ixy: float, ixz: float, iyy: float, iyz: float, izz: float):
    """(principal moments, quaternion of the principal axes) of a symmetric inertia tensor."""
    tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)
    if not np.count_nonzero(tensor - np.diag(np.diag(tensor))):
        return (ixx, iyy, izz), (1.0, 0.0, 0.0, 0.0)
    moments, vecs = np.linalg.eigh(tensor)
    if np.linalg.det(vecs) < 0:
        vecs[:, 2] *= -1
    m = vecs
    w = math.sqrt(max(1.0 + m[0, 0] + m[1, 1] + m[2, 2], 0.0)) / 2
    if w > 1e-6:
        q = (w, (m[2, 1] - m[1, 2]) / (4 * w), (m[0, 2] - m[2, 0]) / (4 * w), (m[1, 0] - m[0, 1]) / (4 * w))
    else:  # a half turn: from the largest diagonal axis
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        r = math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k]) * 2
        v = [0.0, 0.0, 0.0]
        v[i], v[j], v[k] = r / 4, (m[j, i] + m[i, j]) / r, (m[k, i] + m[i, k]) / r
        q = ((m[k, j] - m[j, k]) / r, *v)
    return tuple(float(x) for x in moments), tuple(float(x) for x in q)


@dataclass
class Link:
    name: str
    inertial: Inertial | None = None
    collisions: list[Geometry] = field(default_factory=list)
    visuals: list[Geometry] = field(default_factory=list)


@dataclass(frozen=True)
class Joint:
    name: str
    kind: str  # revolute | prismatic | fixed
    parent: str
    child: str
    origin: Origin
    axis: tuple[float, float, float]
    lower: float
    upper: float
    effort: float
    velocity: float
    mimic: "Mimic | None" = None  # this joint follows another (URDF <mimic>)


@dataclass(frozen=True)
class Mimic:
    """URDF <mimic>: q = multiplier * q(joint) + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class RobotModel:
    name: str
    links: list[Link]  # in tree order: every parent before its children
    joints: list[Joint]  # joints[i - 1] is the parent joint of links[i]

    @property
    def active_joints(self) -> list[Joint]:
        return [j for j in self.joints if j.kind != "fixed"]

    def link_index(self, name: str) -> int:
        for i, link in enumerate(self.links):
            if link.name == name:
                return i
        raise KeyError(f"no link {name!r} in {self.name}; links: {[l.name for l in self.links]}")

    def chain_to(self, link_name: str) -> list[Joint]:
        """Joints from the root to `link_name`, root first."""
        parent_joint = {j.child: j for j in self.joints}
        chain = []
        name = link_name
        while name in parent_joint:
            chain.append(parent_joint[name])
            name = parent_joint[name].parent
        return chain[::-1]


def _floats(text: str | None, default: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split()) if text else default


def _origin(elem: ET.Element | None) -> Origin:
    if elem is None:
        return Origin()
    return Origin(_floats(elem.get("xyz"), (0.0, 0.0, 0.0)), _floats(elem.get("rpy"), (0.0, 0.0, 0.0)))


def _geometry(elem: ET.Element, colors: dict[str, tuple]) -> Geometry:
    geom = elem.find("geometry")
    (shape,) = list(geom)
    if shape.tag == "box":
        size = _floats(shape.get("size"), ())
    elif shape.tag == "sphere":
        size = (float(shape.get("radius")),)
    elif shape.tag == "cylinder":
        size = (float(shape.get("radius")), float(shape.get("length")))
    else:
        raise ValueError(f"unsupported URDF geometry <{shape.tag}>: robot files use box, sphere, cylinder")
    rgba = (0.8, 0.8, 0.8, 1.0)
    mat = elem.find("material")
    if mat is not None:
        color = mat.find("color")
        rgba = _floats(color.get("rgba"), rgba) if color is not None else colors.get(mat.get("name"), rgba)
    return Geometry(shape.tag, size, _origin(elem.find("origin")), rgba)


def load_urdf(path: str | Path) -> RobotModel:
    root = ET.parse(path).getroot()
    colors = {
        m.get("name"): _floats(m.find("color").get("rgba"), ())
        for m in root.findall("material")
        if m.find("color") is not None
    }
    links: dict[str, Link] = {}
    for le in root.findall("link"):
        link = Link(le.get("name"))
        ie = le.find("inertial")
        if ie is not None:
            inertia = ie.find("inertia")
            moments, axes = _principal(*(float(inertia.get(k, 0.0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")))
            link.inertial = Inertial(float(ie.find("mass").get("value")), _origin(ie.find("origin")), moments, axes)
        link.collisions = [_geometry(e, colors) for e in le.findall("collision")]
        link.visuals = [_geometry(e, colors) for e in le.findall("visual")]
        links[link.name] = link
    joints: dict[str, Joint] = {}
    for je in root.findall("joint"):
        kind = je.get("type")
        if kind not in ("revolute", "prismatic", "fixed"):
            raise ValueError(f"unsupported URDF joint type {kind!r} in {path}")
        lim = je.find("limit")
        get = (lambda k, d: float(lim.get(k, d))) if lim is not None else (lambda k, d: d)
        axis = je.find("axis")
        child = je.find("child").get("link")
        me = je.find("mimic")
        mimic = Mimic(me.get("joint"), float(me.get("multiplier", 1.0)), float(me.get("offset", 0.0))) if me is not None else None
        joints[child] = Joint(
            je.get("name"),
            kind,
            je.find("parent").get("link"),
            child,
            _origin(je.find("origin")),
            _floats(axis.get("xyz"), (1.0, 0.0, 0.0)) if axis is not None else (1.0, 0.0, 0.0),
            get("lower", 0.0),
            get("upper", 0.0),
            get("effort", 0.0),
            get("velocity", 0.0),
            mimic,
        )
    (base,) = [name for name in links if name not in joints]
    ordered_links, ordered_joints, stack = [], [], [base]
    while stack:
        name = stack.pop(0)
        ordered_links.append(links[name])
        if name != base:
            ordered_joints.append(joints[name])
        stack.extend(j.child for j in joints.values() if j.parent == name)
    return RobotModel(root.get("name"), ordered_links, ordered_joints)
