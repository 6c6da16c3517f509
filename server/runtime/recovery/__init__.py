"""Recovery: leases kept, dead owners found, their responses claimed and resumed in a new life."""
