"""components: reusable parts that agents compose (adders, replay, actors, networks...).

Importing it changes no process-wide setting: TensorFlow's (threads, GPU
memory, autograph's rules) are applied on purpose by the launcher's set-up,
`launch_programs.devices.configure_tensorflow`.
"""
