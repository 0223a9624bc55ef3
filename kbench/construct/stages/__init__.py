"""Built-in stages, one file each; `STAGES` (kbench.construct.stage) imports every module here."""
