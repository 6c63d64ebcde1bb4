"""A small order service, written the way ordinary Flask projects are."""
