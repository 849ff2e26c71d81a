// Renders onceform's OpenAPI description with the vendored Swagger UI (no inline script).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true });
});
