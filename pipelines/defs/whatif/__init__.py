"""What-if marts: routing policies and cache TTL options replayed on the warehouse's own usage."""
