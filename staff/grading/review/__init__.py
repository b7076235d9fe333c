"""What TAs use: the formgrader and its API, JupyterHub for a TA team, TA kernels in the sandbox, grade
conflicts, model answers, the student's own outputs, integrity flags, and the markdown and page
policies (templates in jupyter/)."""
