//! (being written)

use actix_web::web;

pub fn routes(_cfg: &mut web::ServiceConfig) {}
