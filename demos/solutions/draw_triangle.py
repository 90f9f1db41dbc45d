"""DrawTriangle-v1: the stick's tip lowered onto the first vertex, then straight along the three
sides back to it, a few millimetres above the canvas (dots are drawn below 8 mm)."""

from demos.primitives import box_of, draw_through, scene, table_boxes
from demos.stages import Settle, Solution

DRAW_HEIGHT = 0.002  # the tip above the canvas while drawing (m)

SOLUTION = Solution(
    env_id="DrawTriangle-v1",
    robots=("panda_stick",),
    stages=draw_through("points", 3, closed=True, height=DRAW_HEIGHT) + (Settle(),),
    obstacles=scene(table_boxes, box_of("canvas", "canvas_half_size", margin=-0.002)),
)
