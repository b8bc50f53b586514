#![deny(warnings, missing_docs)]
//! Structs derived in one module and used from another through an import:
//! the layout macro travels with the struct's name, private structs and
//! private fields included; no warning anywhere.

/// Shapes.
pub mod geometry {
    use linear_ad::Differentiable;

    /// A point.
    #[derive(Differentiable, Clone, Copy, Debug)]
    pub struct Point {
        /// Abscissa.
        pub x: f64,
        /// Ordinate.
        pub y: f64,
    }

    /// A segment between two points, with a constant label.
    #[derive(Differentiable, Clone, Copy, Debug)]
    pub struct Segment {
        /// One end.
        pub a: Point,
        /// The other end.
        pub b: Point,
        /// A label, not differentiated.
        #[nondiff]
        pub label: u32,
    }

    #[derive(Differentiable, Clone, Copy)]
    struct Private(f64);

    #[linear_ad::differentiable]
    fn private(p: Private) -> f64 {
        p.0 * p.0
    }

    /// Keeps `private` used.
    pub fn private_square(x: f64) -> (f64, f64) {
        let (y, PrivateTangent(d)) = private_vjp(Private(x), 1.0);
        (y, d)
    }
}

/// Functions of shapes.
pub mod user {
    use crate::geometry::{Point, Segment};
    use linear_ad::differentiable;

    /// The squared length of a segment.
    #[differentiable]
    pub fn length2(s: &Segment) -> f64 {
        let dx = s.b.x - s.a.x;
        let dy = s.b.y - s.a.y;
        dx * dx + dy * dy
    }

    /// The midpoint, a struct result.
    #[differentiable]
    pub fn midpoint(s: Segment) -> Point {
        Point {
            x: 0.5 * (s.a.x + s.b.x),
            y: 0.5 * (s.a.y + s.b.y),
        }
    }
}

fn main() {
    use geometry::{Point, PointTangent, Segment};
    let s = Segment {
        a: Point { x: 0.0, y: 1.0 },
        b: Point { x: 3.0, y: 5.0 },
        label: 1,
    };
    let (l, g) = user::length2_vjp(&s, 1.0);
    assert_eq!(l, 25.0);
    assert_eq!((g.a.x, g.b.y), (-6.0, 8.0));
    let (m, dm) = user::midpoint_jvp(s, g);
    assert_eq!((m.x, m.y), (1.5, 3.0));
    let PointTangent { x, y } = dm;
    assert_eq!((x, y), (0.0, 0.0));
    assert_eq!(geometry::private_square(3.0), (9.0, 6.0));
    let _ = s.label;
}
