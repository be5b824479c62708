"""Where generated code runs: devices, the sandbox, static checks."""
