"""JupyterHub configuration for the course's TA team (`make hub`; docs/admin.md: "The TAs'
JupyterHub"). Everything but who is who is set by staff/grading/review/hub.py.

Groups (nbgrader's names): instructors are the hub's admins and grade; graders are in
formgrade-transformers-course and may open the formgrader; students may log in but not grade.
Edit the lists, then restart `make hub` (JupyterHub adds users to groups at start; removing one
is done in the admin page, /hub/admin)."""

from staff.grading.review import hub

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

hub.configure(
    c,
    instructors=["instructor"],
    graders=["ta1", "ta2"],
    students=[],
)

# Logins: by default each person signs up at /hub/signup and an instructor approves them at
# /hub/authorize (NativeAuthenticator, passwords kept hashed in .hub/). With the university's
# single sign-on instead, e.g. your LMS (pip install jupyterhub-ltiauthenticator):
#   c.JupyterHub.authenticator_class = "ltiauthenticator.lti13.auth.LTI13Authenticator"
#   c.LTI13Authenticator.issuer = "https://canvas.instructure.com"
#   c.LTI13Authenticator.client_id = ["<the developer key's client id>"]
#   c.LTI13Authenticator.authorize_url = "https://<your canvas>/api/lti/authorize_redirect"
#   c.LTI13Authenticator.jwks_endpoint = "https://<your canvas>/api/lti/security/jwks"
#   c.LTI13Authenticator.username_key = "email"
# or GitHub/Google/your university's OAuth (pip install oauthenticator), e.g.
#   c.JupyterHub.authenticator_class = "github"
#   c.GitHubOAuthenticator.oauth_callback_url = "https://<hub address>/hub/oauth_callback"
#   c.GitHubOAuthenticator.client_id, .client_secret = "...", "..."
# Either way the lists above still decide who may grade.
