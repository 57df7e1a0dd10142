"""Server side of fastapi-mrtr."""
