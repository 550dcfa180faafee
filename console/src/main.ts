import { html } from 'htm/preact';
import { render } from 'preact';
import { config } from 'zod';
import { App } from './components/app.js';
import './styles.css';

// The console's Content-Security-Policy forbids eval; zod would otherwise probe `new Function` (a CSP violation report
// in the browser console) before its first object parse.
config({ jitless: true });

const root = document.getElementById('app');
if (root) render(html`<${App} />`, root);
