"""Jobs, rounds and artifacts, kept in SQLite or PostgreSQL through SQLModel."""
