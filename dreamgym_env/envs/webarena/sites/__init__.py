"""The WebArena sites: seeded data, pages and the forms that change their state."""
