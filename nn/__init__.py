"""tgrad.nn: modules, functional, losses and init (filled by the nn issue)."""
