//! Thin binary: hands off to the library.
fn main() {
    println!("copyscope");
}
