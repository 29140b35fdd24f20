"""launch_programs: program graphs, the generic agent program, launchers and the CLI."""
