// Starts the vendored Swagger UI on the OpenAPI document named by the page (no inline script,
// so the page's Content-Security-Policy can forbid them).
"use strict";
const root = document.getElementById("swagger-ui");
window.ui = SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  validatorUrl: null,
});
