use linear_ad_gradbench::evals::{particle::particle, saddle::{saddle, Mode}};
fn main() {
    let m = [Mode::Forward, Mode::Reverse];
    for a in m { for b in m {
        let t = std::time::Instant::now();
        let s = saddle([1.0, 1.0], a, b);
        let t1 = t.elapsed();
        let t = std::time::Instant::now();
        let p = particle(0.0, a, b);
        println!("{a:?} {b:?} saddle {s:?} {t1:?} particle {p} {:?}", t.elapsed());
    }}
}
