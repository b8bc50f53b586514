//! Methods called from differentiable code in other modules and blocks,
//! with every visibility of struct and method: the linearization types and
//! their `Method` impls compile warning-free whatever the mix.

#![deny(warnings)]

mod geo {
    use linear_ad::{differentiable, Differentiable};

    #[derive(Differentiable, Clone, Copy)]
    pub struct Point {
        pub x: f64,
        pub y: f64,
    }

    #[differentiable]
    impl Point {
        #[differentiable]
        pub fn norm2(&self) -> f64 {
            self.x * self.x + self.y * self.y
        }

        /// A private method of a public struct.
        #[differentiable]
        fn twice(&self) -> f64 {
            2.0 * self.norm2()
        }

        #[differentiable]
        pub fn energy(&self, k: f64) -> f64 {
            k * self.twice()
        }
    }

    /// A private struct with a public method.
    #[derive(Differentiable, Clone, Copy)]
    struct Hidden {
        v: f64,
    }

    #[differentiable]
    impl Hidden {
        #[differentiable]
        pub fn sq(&self) -> f64 {
            self.v * self.v
        }
    }

    #[differentiable]
    fn hidden_sq(h: &Hidden) -> f64 {
        h.sq() + Hidden::sq(h)
    }

    pub fn hidden_grad(v: f64) -> f64 {
        hidden_sq_vjp(&Hidden { v }, 1.0).1.v
    }

    #[derive(Differentiable, Clone, Copy)]
    pub(crate) struct Cell {
        pub(crate) a: f64,
    }

    #[differentiable]
    impl Cell {
        #[differentiable]
        pub(crate) fn cube(&self) -> f64 {
            self.a * self.a * self.a
        }
    }
}

mod user {
    use crate::geo::Point;
    use linear_ad::differentiable;

    #[differentiable]
    pub fn energy_of(p: &Point, k: f64) -> f64 {
        p.energy(k) + crate::geo::Point::norm2(p)
    }

    #[differentiable]
    pub(crate) fn cube_of(c: crate::geo::Cell) -> f64 {
        c.cube()
    }
}

fn main() {
    let p = geo::Point { x: 1.0, y: 2.0 };
    let (e, (dp, dk)) = user::energy_of_vjp(&p, 3.0, 1.0);
    // (2k + 1)|p|², its gradient 2(2k + 1)p and 2|p|².
    assert_eq!(e, 35.0);
    assert_eq!((dp.x, dp.y, dk), (14.0, 28.0, 10.0));
    assert_eq!(geo::hidden_grad(3.0), 12.0);
    let (c, dc) = user::cube_of_vjp(geo::Cell { a: 2.0 }, 1.0);
    assert_eq!((c, dc.a), (8.0, 12.0));
}
